#!/usr/bin/env python3
"""same_output.py FILE COMMAND...: passes when COMMAND prints exactly the content of FILE (a
generated example graph must be what its committed generator prints)."""
import subprocess
import sys

want = open(sys.argv[1], encoding="utf-8").read()
got = subprocess.run(sys.argv[2:], check=True, capture_output=True, text=True).stdout
if got != want:
    sys.exit(f"{sys.argv[1]} is not what {' '.join(sys.argv[2:])} prints: regenerate it")
