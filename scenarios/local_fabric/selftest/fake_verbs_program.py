#!/usr/bin/env python3
"""A stand-in for the programs run_pair.sh runs, for its self-test.

Called through a symlink named after the program it plays (ibv_rc_pingpong,
ib_send_bw, ibv_xsrq_pingpong, ...), with that program's options; prints
what the real program prints on success (the same address and result lines,
byte for byte where run_pair.sh reads them), exchanging the addresses with
its peer over TCP as the real one does. The side is the server without a
host argument, the client with one; VERBFAULT_PROC gives the LID (1 + it),
as the local fabric will. FAKE_MODE makes it go wrong in one way:

  ok            a correct pair
  self          both sides have LID 1, QPN 0x11...: a process talks to itself
  swap          the server sends a PSN other than the one it printed
  invalid_data  the pingpong server reports "invalid data in page 0"
  wrong_iters   the result lines count one iteration less
  wrong_bytes   perftest's result row has other #bytes
  client_crash  the client dies of SIGABRT after the exchange
  client_hang   the client hangs before the exchange
  server_hang   the server hangs after its result lines
  server_fail   the server fails before listening (exit 1)
  error_line    the client prints a perftest error line but exits 0
  xrc_works     ibv_xsrq_pingpong: both sides exchange and print "success"
  xrc_errno     ibv_xsrq_pingpong: ibv_open_xrcd fails with EINVAL
  xrc_crash     ibv_xsrq_pingpong: dies of SIGABRT

A crash is SIGABRT (a failed assert), not SIGSEGV: in the sanitized suite
the preloaded AddressSanitizer would take a SIGSEGV (handle_segv) and
turn it into exit status 1.
"""
import os
import random
import signal
import socket
import sys
import time

prog = os.path.basename(sys.argv[0])
mode = os.environ.get("FAKE_MODE", "ok")
member = int(os.environ.get("VERBFAULT_PROC", "0"))


def say(*lines, err=False):
    stream = sys.stderr if err else sys.stdout
    for line in lines:
        print(line, file=stream, flush=True)


def parse(argv):
    opts = {"p": 18515, "n": 1000, "s": None, "q": 16, "host": None, "flags": set()}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-p", "-n", "-s", "-q", "-d", "-m", "-r", "-i", "-g"):
            if a[1] in "pnsq":
                opts[a[1]] = int(argv[i + 1])
            i += 2
            continue
        if a.startswith("-"):
            opts["flags"].add(a)
        else:
            opts["host"] = a
        i += 1
    return opts


def exchange(opts, mine):
    """Sends our address lines to the peer, returns the peer's."""
    if opts["host"] is None:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            srv.bind(("0.0.0.0", opts["p"]))
        except OSError:
            say("Couldn't listen to port %d" % opts["p"], err=True)
            sys.exit(1)
        srv.listen(1)
        conn, _ = srv.accept()
        srv.close()
    else:
        conn = socket.create_connection((opts["host"], opts["p"]))
    f = conn.makefile("rw")
    f.write(mine + "\n")
    f.flush()
    theirs = f.readline().strip()
    conn.close()
    return theirs


def hang():
    while True:
        time.sleep(1)


def addresses(count):
    lid = 1 if mode == "self" else 1 + member
    return [(lid, 0x11 + i, random.randrange(1 << 24)) for i in range(count)]


def encode(addrs, server):
    if mode == "swap" and server:
        addrs = [(l, q, (p + 1) % (1 << 24)) for l, q, p in addrs]
    return ";".join("%x,%x,%x" % a for a in addrs)


def decode(text):
    return [tuple(int(x, 16) for x in a.split(",")) for a in text.split(";")]


def pingpong(opts):
    server = opts["host"] is None
    if mode == "server_fail" and server:
        say("Couldn't get context for vfsim0", err=True)
        sys.exit(1)
    size = opts["s"] or (1024 if prog == "ibv_ud_pingpong" else 4096)
    iters = opts["n"]
    mine = addresses(opts["q"] if prog == "ibv_srq_pingpong" else 1)
    sep = ":" if prog == "ibv_ud_pingpong" else ","
    for lid, qpn, psn in mine:
        say("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x%s GID ::" % (lid, qpn, psn, sep))
    if mode == "client_hang" and not server:
        hang()
    theirs = decode(exchange(opts, encode(mine, server)))
    for lid, qpn, psn in theirs:
        say("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID ::" % (lid, qpn, psn))
    if mode == "client_crash" and not server:
        os.kill(os.getpid(), signal.SIGABRT)
    time.sleep(0.05)
    shown = iters - 1 if mode == "wrong_iters" else iters
    usec = 1234.0
    say("%d bytes in %.2f seconds = %.2f Mbit/sec" % (size * shown * 2, usec / 1e6, size * shown * 2 * 8 / usec),
        "%d iters in %.2f seconds = %.2f usec/iter" % (shown, usec / 1e6, usec / shown))
    if server and "-c" in opts["flags"] and mode == "invalid_data":
        say("invalid data in page 0")
    if mode == "server_hang" and server:
        hang()


RESULT_LINE = "-" * 87


def perftest(opts):
    server = opts["host"] is None
    bw = prog.endswith("_bw")
    size = 8 if prog == "ib_atomic_bw" else (opts["s"] or (65536 if bw else 2))
    iters = opts["n"]
    if server:
        say("", "*" * 36, "* Waiting for client to connect... *", "*" * 36)
    if mode == "client_hang" and not server:
        hang()
    (lid, qpn, psn), = addresses(1)
    theirs = decode(exchange(opts, encode([(lid, qpn, psn)], server)))
    say(RESULT_LINE, "                    Fake Test", " Device         : vfsim0", RESULT_LINE,
        " local address: LID %#04x QPN %#06x PSN %#06x" % (lid, qpn, psn))
    for rlid, rqpn, rpsn in theirs:
        say(" remote address: LID %#04x QPN %#06x PSN %#06x" % (rlid, rqpn, rpsn))
    say(RESULT_LINE)
    if mode == "client_crash" and not server:
        os.kill(os.getpid(), signal.SIGABRT)
    shown = size * 2 if mode == "wrong_bytes" else size
    if prog == "ib_read_lat" and server:
        pass
    elif bw:
        say(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
            " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f" % (shown, iters, 1234.5, 1200.25, 0.019204))
    else:
        say(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ",
            " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f"
            % (shown, iters, 1.5, 9.75, 2.0, 2.25, 0.5, 5.0, 9.0))
    say(RESULT_LINE)
    if mode == "error_line" and not server:
        say("Failed to close connection between server and client", err=True)
    if mode == "server_hang" and server:
        hang()


def xsrq(opts):
    if mode == "xrc_works":
        exchange(opts, "0,0,0")
        say("success")
        return
    if mode == "xrc_crash":
        os.kill(os.getpid(), signal.SIGABRT)
    say("Couldn't Open the XRC Domain %d" % (22 if mode == "xrc_errno" else 95), err=True)
    sys.exit(1)


opts = parse(sys.argv[1:])
if prog == "ibv_xsrq_pingpong":
    xsrq(opts)
elif prog.startswith("ibv_"):
    pingpong(opts)
else:
    perftest(opts)
