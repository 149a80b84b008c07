#!/usr/bin/env python3
# pty-job-control.py CLI MASTERS RESOURCE [MODE] - `run` under an
# interactive bash in a pty, as a user at a terminal. MODE:
#   foreground (default)  `run --foreground`: CMD reads the terminal, ^Z
#                         stops the whole job (the shell says Stopped and
#                         gets its prompt back), `fg` hands the terminal to
#                         CMD again, and the run ends 0;
#   auto                  the same without the flag: stdin is the terminal,
#                         so CMD's group takes it, as under flock;
#   background            `run ... &`: CMD reads the terminal from the
#                         background, the whole job stops (one line says
#                         why), `fg` gives CMD the terminal, the run ends 0.
# Prints "ok", or what it waited for in vain, and exits 1.
import os
import pty
import select
import sys
import time

cli, masters, res = sys.argv[1:4]
mode = sys.argv[4] if len(sys.argv) > 4 else 'foreground'
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




def finish():
    """CMD is done: the shell's prompt, run's status 0, and goodbye."""
    expect('$ ')
    os.write(fd, b'echo rc=$?\n')
    expect('rc=0')
    os.write(fd, b'exit\n')
    print('ok')
    sys.exit(0)


expect('$ ')
if mode == 'background':
    # set -b: the shell reports the job's stop at once, not at the next prompt.
    os.write(fd, b'set -b\n')
    expect('$ ')
    os.write(fd, ("'%s' run '%s' -c 'read x; echo got:$x' &\n" % (cli, res)).encode())
    expect('from the background')   # redlock-cli's one line
    expect('Stopped')
    os.write(fd, b'fg\n')
    expect('fg')
    expect('run')                   # bash echoes the job it continues
    os.write(fd, b'one\n')
    expect('got:one')
    finish()
flag = ' --foreground' if mode == 'foreground' else ''
os.write(fd, ("'%s' run '%s'%s -c 'read x; echo got:$x; read y; echo got2:$y'\n"
              % (cli, res, flag)).encode())
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
finish()
