"""KCFI Lab gdb commands for x86_64 and arm64 kCFI kernels.

Loaded by ./run.sh --gdb; by hand: (gdb) source gdb-scripts/kcfi.py

  kcfi-preamble FUNC    the type id in front of FUNC, and its preamble
  kcfi-site [ADDR]      the check at or after ADDR (default $pc): expected
                        id, target register and, when running, the verdict
  kcfi-step-to-trap     stepi through the check: stops at the ud2/brk on a
                        mismatch, at the call when the types match
  kcfi-explain          at a ud2/brk: decode it the way the kernel does
  kcfi-break-handlers   breakpoints on the kernel's CFI trap handlers
"""

import gdb

X86_REGS = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
            "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"]


def arch():
    try:
        name = gdb.selected_frame().architecture().name()
    except gdb.error:
        name = gdb.execute("show architecture", to_string=True)
    return "arm64" if "aarch64" in name else "x86_64"


def read(addr, size):
    return bytes(gdb.selected_inferior().read_memory(addr, size))


def u32(addr):
    return int.from_bytes(read(addr, 4), "little")


def address_of(expr):
    val = gdb.parse_and_eval(expr)
    if val.type.code == gdb.TYPE_CODE_FUNC:
        val = val.address
    return int(val.cast(gdb.lookup_type("unsigned long")))


def symbol(addr):
    out = gdb.execute("info symbol 0x%x" % addr, to_string=True).strip()
    return out.split(" in section")[0]


def reg(name):
    return int(gdb.parse_and_eval("$" + name).cast(gdb.lookup_type("unsigned long")))


def running():
    try:
        gdb.selected_frame()
        return True
    except gdb.error:
        return False


def target_type(target):
    """The type id in front of target, or None when x86 shows no preamble."""
    if arch() == "x86_64" and read(target - 5, 1)[0] != 0xB8:
        return None
    return u32(target - 4)


def find_site(start, span=96):
    """The first kCFI check at or after start, as a dict."""
    code = read(start, span)
    if arch() == "x86_64":
        for i in range(len(code) - 14):
            # movl $-id, %r10d (41 ba) or %r11d (41 bb)
            if code[i] == 0x41 and code[i + 1] in (0xBA, 0xBB):
                rex, op, modrm, disp = code[i + 6:i + 10]
                if op == 0x03 and rex in (0x44, 0x45) and disp == 0xFC \
                        and code[i + 10] == 0x74 and code[i + 12:i + 14] == b"\x0f\x0b":
                    imm = int.from_bytes(code[i + 2:i + 6], "little")
                    rm = (modrm & 7) | (8 if rex & 1 else 0)
                    return {"addr": start + i, "expected": (-imm) & 0xFFFFFFFF,
                            "target_reg": X86_REGS[rm], "trap": start + i + 12,
                            "call": start + i + 14}
    else:
        words = [int.from_bytes(code[j:j + 4], "little") for j in range(0, len(code) - 3, 4)]
        for i in range(len(words) - 5):
            w = words[i:i + 6]
            if (w[0] & 0xFFFFFC1F) == 0xB85FC010 and (w[1] & 0xFFE0001F) == 0x72800011 \
                    and (w[2] & 0xFFE0001F) == 0x72A00011 and w[3] == 0x6B11021F \
                    and (w[5] & 0xFFE0001F) == 0xD4200000:
                lo, hi = (w[1] >> 5) & 0xFFFF, (w[2] >> 5) & 0xFFFF
                return {"addr": start + 4 * i, "expected": lo | hi << 16,
                        "target_reg": "x%d" % ((w[0] >> 5) & 31),
                        "trap": start + 4 * i + 20, "call": start + 4 * i + 24,
                        "brk": (w[5] >> 5) & 0xFFFF}
    raise gdb.GdbError("no kCFI check within %d bytes of 0x%x" % (span, start))


class Preamble(gdb.Command):
    """kcfi-preamble FUNC: the type id in front of FUNC and its preamble."""

    def __init__(self):
        super().__init__("kcfi-preamble", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        if not arg:
            raise gdb.GdbError("usage: kcfi-preamble FUNC")
        addr = address_of(arg)
        t = target_type(addr)
        if t is None:
            print("%s at 0x%x has no kCFI preamble" % (arg, addr))
            return
        print("%s at 0x%x: type id 0x%08x (the 4 bytes at 0x%x)" % (arg, addr, t, addr - 4))
        start = addr - 5 if arch() == "x86_64" else addr - 4
        if arch() == "x86_64":
            gdb.execute("x/1i 0x%x" % start)
        else:
            gdb.execute("x/1xw 0x%x" % start)


class Site(gdb.Command):
    """kcfi-site [ADDR]: the kCFI check at or after ADDR (default $pc)."""

    def __init__(self):
        super().__init__("kcfi-site", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        start = address_of(arg) if arg else reg("pc")
        s = find_site(start)
        print("check at 0x%x (%s): expected type 0x%08x, target in %s, trap at 0x%x"
              % (s["addr"], symbol(s["addr"]), s["expected"], s["target_reg"], s["trap"]))
        if running():
            target = reg(s["target_reg"])
            t = target_type(target)
            if t is None:
                print("target 0x%x (%s) has no kCFI preamble: mismatch" % (target, symbol(target)))
            else:
                print("target 0x%x (%s) has type 0x%08x: %s" % (
                    target, symbol(target), t, "match" if t == s["expected"] else "MISMATCH"))


class StepToTrap(gdb.Command):
    """kcfi-step-to-trap: stepi through the next check to its trap or its call."""

    def __init__(self):
        super().__init__("kcfi-step-to-trap", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        s = find_site(reg("pc"))
        for _ in range(200):
            pc = reg("pc")
            if pc in (s["trap"], s["call"]):
                break
            gdb.execute("stepi", to_string=True)
        pc = reg("pc")
        gdb.execute("x/1i $pc")
        if arch() == "x86_64":
            print("r10 = 0x%08x (0 when the types match)" % (reg("r10") & 0xFFFFFFFF))
        else:
            print("w16 = 0x%08x (target type), w17 = 0x%08x (expected type)"
                  % (reg("x16") & 0xFFFFFFFF, reg("x17") & 0xFFFFFFFF))
        print("at the trap: the types differ" if pc == s["trap"] else
              "at the call: the types match")


class Explain(gdb.Command):
    """kcfi-explain: decode the ud2/brk at $pc as the kernel's CFI handler does."""

    def __init__(self):
        super().__init__("kcfi-explain", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        pc = reg("pc")
        if arch() == "x86_64":
            if read(pc, 2) != b"\x0f\x0b":
                raise gdb.GdbError("no ud2 at $pc")
            s = find_site(pc - 12, 16)
            target = reg(s["target_reg"])
            print("ud2 at 0x%x: the movl at pc-12 holds -0x%08x, so the expected type is 0x%08x"
                  % (pc, s["expected"], s["expected"]))
            print("the addl at pc-6 reads -4(%%%s): the target is %s = 0x%x (%s)"
                  % (s["target_reg"], s["target_reg"], target, symbol(target)))
        else:
            insn = u32(pc)
            if (insn & 0xFFE0001F) != 0xD4200000:
                raise gdb.GdbError("no brk at $pc")
            imm = (insn >> 5) & 0xFFFF
            if imm & 0xF000 != 0x8000:
                raise gdb.GdbError("brk #0x%x is not a kCFI trap (0x8000-0x8fff)" % imm)
            treg, ireg = imm & 31, (imm >> 5) & 31
            target = reg("x%d" % treg)
            print("brk #0x%x: 0x8000 marks kCFI; bits 0-4 = %d: target in x%d; bits 5-9 = %d: type in w%d"
                  % (imm, treg, treg, ireg, ireg))
            print("expected type w%d = 0x%08x; target x%d = 0x%x (%s)"
                  % (ireg, reg("x%d" % ireg) & 0xFFFFFFFF, treg, target, symbol(target)))
        t = target_type(target)
        print("the target's own type: %s" % ("none (no kCFI preamble)" if t is None else "0x%08x" % t))


class BreakHandlers(gdb.Command):
    """kcfi-break-handlers: hardware breakpoints on the CFI trap handlers."""

    def __init__(self):
        super().__init__("kcfi-break-handlers", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        handler = "handle_cfi_failure" if arch() == "x86_64" else "cfi_handler"
        for func in (handler, "report_cfi_failure"):
            gdb.execute("hbreak " + func)


for command in (Preamble, Site, StepToTrap, Explain, BreakHandlers):
    command()
