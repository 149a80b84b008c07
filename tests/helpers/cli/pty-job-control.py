#!/usr/bin/env python3
# pty-job-control.py CLI MASTERS RESOURCE - `run --foreground` under an
# interactive bash in a pty, as a user at a terminal: CMD reads the
# terminal, ^Z stops the whole job (the shell says Stopped and gets its
# prompt back), `fg` hands the terminal to CMD again, and the run ends 0.
# Prints "ok", or what it waited for in vain, and exits 1.
import os
import pty
import select
import sys
import time

cli, masters, res = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.environ['REDLOCK_MASTERS'] = masters
    os.environ['PS1'] = '$ '
    os.execvp('bash', ['bash', '--norc', '--noprofile', '-i'])
buf = b''


def expect(needle, timeout=15):
    global buf
    end = time.time() + timeout
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                buf += os.read(fd, 4096)
            except OSError:
                break
        if needle.encode() in buf:
            buf = buf[buf.index(needle.encode()) + len(needle):]
            return
    print('timed out waiting for %r; last output %r' % (needle, buf[-300:]))
    os.kill(pid, 9)
    sys.exit(1)


expect('$ ')
os.write(fd, ("'%s' run '%s' --foreground -c 'read x; echo got:$x; read y; echo got2:$y'\n"
              % (cli, res)).encode())
os.write(fd, b'one\n')
expect('got:one')
os.write(fd, b'\x1a')   # ^Z: CMD's group gets SIGTSTP; redlock-cli stops with it
expect('Stopped')
expect('$ ')
os.write(fd, b'fg\n')
expect('fg')
time.sleep(0.3)
os.write(fd, b'two\n')
expect('got2:two')
expect('$ ')
os.write(fd, b'echo rc=$?\n')
expect('rc=0')
os.write(fd, b'exit\n')
print('ok')
