#pragma once
int benchGemm(int argc, char** argv);
