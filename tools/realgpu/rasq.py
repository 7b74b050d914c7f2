# Ask NCCL's RAS (text protocol, as NCCL's own ncclras client does) and print
# the answer verbatim: CLIENT PROTOCOL 2, TIMEOUT, then STATUS or VERBOSE STATUS.
import socket, sys
verbose = len(sys.argv) > 1 and sys.argv[1] == "verbose"
s = socket.create_connection(("127.0.0.1", 28028), timeout=12)
f = s.makefile("rwb")
def ask(line):
    f.write(line.encode() + b"\n"); f.flush()
    return f.readline().decode(errors="replace")
print("> CLIENT PROTOCOL 2 <", ask("CLIENT PROTOCOL 2").rstrip())
print("> TIMEOUT 5 <", ask("TIMEOUT 5").rstrip())
f.write(b"VERBOSE STATUS\n" if verbose else b"STATUS\n"); f.flush()
sys.stdout.write(f.read().decode(errors="replace"))
