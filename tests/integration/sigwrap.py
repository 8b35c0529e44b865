#!/usr/bin/env python3
"""sigwrap.py PIDFILE STATUSFILE CMD [ARGS...] - run CMD with SIGINT, SIGTERM and SIGHUP at
their default action (a test script's background job starts with SIGINT ignored), or ignored
where SIGWRAP_IGNORE names them (e.g. "INT HUP", as nohup and a script's background jobs do);
CMD's pid goes into PIDFILE, then how it ended into STATUSFILE: "exit N" or "signal N", so a
test can tell a death by the signal from an exit(130)."""
import os
import signal
import subprocess
import sys

ignored = set(os.environ.get("SIGWRAP_IGNORE", "").split())
for name in ("INT", "TERM", "HUP"):
    signal.signal(getattr(signal, "SIG" + name), signal.SIG_IGN if name in ignored else signal.SIG_DFL)
child = subprocess.Popen(sys.argv[3:])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(child.pid))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
rc = child.wait()
with open(sys.argv[2], "w") as f:
    f.write("signal %d\n" % -rc if rc < 0 else "exit %d\n" % rc)
