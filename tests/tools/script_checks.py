"""What the tests of tools/*.py share: run a script as a user would, and
collect failed checks instead of stopping at the first."""
import subprocess
import sys


class ScriptChecks:
    def __init__(self, script):
        self.script = script
        self.failures = []

    def check(self, cond, what):
        if not cond:
            self.failures.append(what)
            print("FAIL:", what)

    def run(self, *args):
        """The script's exit status, stdout and stderr."""
        p = subprocess.run([sys.executable, str(self.script), *args], capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def finish(self, name):
        """Prints the verdict and exits 1 if any check failed."""
        if self.failures:
            print(f"{name}: {len(self.failures)} check(s) failed")
            sys.exit(1)
        print(f"{name}: passed")
        sys.exit(0)
