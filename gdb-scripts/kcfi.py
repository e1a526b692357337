"""KCFI Lab gdb commands for the lab's kCFI kernels.

Loaded by ./run.sh --gdb; by hand: (gdb) source gdb-scripts/kcfi.py

  kcfi-preamble FUNC    the type id in front of FUNC, and its preamble
  kcfi-site [ADDR]      the check at or after ADDR (default $pc): expected
                        id, target register and, when running, the verdict
  kcfi-step-to-trap     stepi through the check: stops at the trap on a
                        mismatch, at the call when the types match
  kcfi-explain          at the trap: decode it the way the kernel does
  kcfi-break-handlers   breakpoints on the kernel's CFI trap handlers

The commands read the running kernel's memory; the lab's tool (lab/kcfi,
through ./run.sh kcfi) decodes it, and the lab's arch files
(lab/arch/*.conf) say what differs between arches.
"""

import glob
import json
import os
import subprocess

import gdb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gdb_arch():
    try:
        return gdb.selected_frame().architecture().name()
    except gdb.error:
        out = gdb.execute("show architecture", to_string=True)
        return out.split('currently "')[-1].split('"')[0] if 'currently "' in out \
            else out.strip().rstrip(".").split()[-1].strip('"')


def read_conf(path):
    """A lab data file (KEY=VALUE lines) as a dict."""
    conf = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#") and "=" in line:
                key, value = line.split("=", 1)
                conf[key] = value
    return conf


def kernel_conf():
    """The lab kernel's file (KCFI_LAB_KERNEL, else the default one)."""
    want = os.environ.get("KCFI_LAB_KERNEL", "")
    for path in sorted(glob.glob(os.path.join(ROOT, "lab", "kernel", "*.conf"))):
        conf = read_conf(path)
        version = os.path.basename(path)[:-len(".conf")]
        if version == want or (not want and conf.get("default") == "yes"):
            return conf
    raise gdb.GdbError("no lab/kernel/%s.conf" % (want or "*"))


def arch_conf():
    """The lab's arch file for gdb's architecture, as a dict (name: its
    arch), with the lab kernel's ARCH.KEY values over the arch's own."""
    name = gdb_arch()
    for path in sorted(glob.glob(os.path.join(ROOT, "lab", "arch", "*.conf"))):
        conf = read_conf(path)
        conf["name"] = os.path.basename(path)[:-len(".conf")]
        if conf.get("gdb_arch") == name:
            prefix = conf["name"] + "."
            for key, value in kernel_conf().items():
                if key.startswith(prefix):
                    conf[key[len(prefix):]] = value
            return conf
    raise gdb.GdbError("no lab/arch/*.conf has gdb_arch=%s" % name)


def tool(*args):
    """The output of ./run.sh kcfi ARGS."""
    res = subprocess.run([os.path.join(ROOT, "run.sh"), "kcfi"] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, check=False)
    if res.returncode:
        raise gdb.GdbError(res.stderr.strip().splitlines()[-1] if res.stderr.strip()
                           else "./run.sh kcfi %s failed" % " ".join(args))
    return res.stdout


def read(addr, size):
    return bytes(gdb.selected_inferior().read_memory(addr, size))


def read_upto(addr, size):
    """The bytes from addr on: size of them, or fewer where the readable
    memory (the image's code, without a running kernel) ends first."""
    while True:
        try:
            return read(addr, size)
        except gdb.MemoryError:
            if size <= 16:
                raise
            size //= 2


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


def preamble(entry):
    """The preamble in front of entry, as the lab's tool decodes the code
    before it: a dict with type_id (None when there is none), id_offset
    and preamble_bytes."""
    for span in (64, 16, 8):
        try:
            code = read(entry - span, span)
            break
        except gdb.MemoryError:
            continue
    else:
        raise gdb.GdbError("cannot read the code before 0x%x" % entry)
    d = json.loads(tool("decode", "--arch", arch_conf()["name"], "--preamble", "--json", code.hex(" ")))
    d["type_id"] = int(d["type_id"], 16) if d["type_id"] else None
    return d


def target_type(target):
    """The type id the kernel reads in front of target, or None when the
    kernel sees no preamble there (arch file: untyped_target)."""
    if arch_conf()["untyped_target"] == "word":
        return u32(target - 4)
    return preamble(target)["type_id"]


def expected_prototype(addr):
    """The prototype the check at addr expects, as the image's DWARF names
    it (kcfi site --types), or None: no image with DWARF, or the check is
    not in it (a module)."""
    image = gdb.current_progspace().filename
    if not image:
        return None
    try:
        d = json.loads(tool("site", image, "0x%x" % addr, "--types", "--json"))
        return d["sites"][0].get("expected_prototype")
    except (gdb.GdbError, ValueError, KeyError, IndexError):
        return None


def find_site(start, span=96):
    """The first kCFI check at or after start, decoded by the lab's tool.
    Its bytes are the check's, and the call's after it when the tool says
    the check includes the call (call_length): what explain decodes."""
    code = read_upto(start, span)
    try:
        d = json.loads(tool("decode", "--arch", arch_conf()["name"], "--json", code.hex(" ")))
    except gdb.GdbError as e:
        if "no KCFI check" in str(e):
            raise gdb.GdbError("no kCFI check within %d bytes of 0x%x" % (span, start))
        raise
    end = d["offset"] + d["length"] + d.get("call_length", 0)
    site = {"addr": start + d["offset"], "expected": int(d["type_id"], 16),
            "target_reg": d["target_register"], "trap": start + d["trap_offset"],
            "call": start + d["offset"] + d["length"], "bytes": code[d["offset"]:end],
            # Every register the tool names, by its role: "check" for
            # check_register, "load" for load_register, ...
            "registers": {k[:-len("_register")]: v for k, v in d.items()
                          if k.endswith("_register")}}
    if "brk_immediate" in d:
        site["brk"] = int(d["brk_immediate"], 16)
    return site


def check_registers(site):
    """(register, meaning) pairs the check compared (arch file:
    check_registers). "@ROLE" stands for the register the tool names for
    this check as ROLE_register (x86_64's @check: the register the check
    computes in); other names are gdb's register names as they are."""
    for item in arch_conf()["check_registers"].split(","):
        name, what = item.split(":", 1)
        if name.startswith("@"):
            if name[1:] not in site["registers"]:
                raise gdb.GdbError("the lab's tool names no %s register for this check"
                                   % name[1:])
            name = site["registers"][name[1:]]
        yield name, what


class Preamble(gdb.Command):
    """kcfi-preamble FUNC: the type id in front of FUNC and its preamble."""

    def __init__(self):
        super().__init__("kcfi-preamble", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        if not arg:
            raise gdb.GdbError("usage: kcfi-preamble FUNC")
        addr = address_of(arg)
        p = preamble(addr)
        if p["type_id"] is None:
            print("%s at 0x%x has no kCFI preamble" % (arg, addr))
            return
        at = addr - p["id_offset"]
        print("%s at 0x%x: type id 0x%08x (the 4 bytes at 0x%x)" % (arg, addr, p["type_id"], at))
        if "preamble_register" in p:
            # x86_64: the register of the mov; with -fsanitize-kcfi-arity
            # (Linux 7.3's FINEIBT_BHI) it counts the register arguments.
            print("the preamble's register: %s (with -fsanitize-kcfi-arity: arity %d%s)"
                  % (p["preamble_register"], p["arity_if_encoded"],
                     ", some arguments on the stack" if p["arity_if_encoded"] == 7 else ""))
        gdb.execute("x/1i 0x%x" % (addr - p["preamble_bytes"]))


class Site(gdb.Command):
    """kcfi-site [ADDR]: the kCFI check at or after ADDR (default $pc)."""

    def __init__(self):
        super().__init__("kcfi-site", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        start = address_of(arg) if arg else reg("pc")
        s = find_site(start)
        print("check at 0x%x (%s): expected type 0x%08x, target in %s, trap at 0x%x"
              % (s["addr"], symbol(s["addr"]), s["expected"], s["target_reg"], s["trap"]))
        proto = expected_prototype(s["addr"])
        if proto:
            print("expected prototype: %s" % proto)
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
        # What the check compared.
        print(", ".join("%s = 0x%08x (%s)" % (r, reg(r) & 0xFFFFFFFF, what)
                        for r, what in check_registers(s)))
        print("at the trap: the types differ" if pc == s["trap"] else
              "at the call: the types match")


class Explain(gdb.Command):
    """kcfi-explain: decode the trap at $pc as the kernel's CFI handler does."""

    def __init__(self):
        super().__init__("kcfi-explain", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        pc = reg("pc")
        # The check whose trap is at $pc: the first one that ends at or
        # after it, among those in the 32 bytes before it. The 8 bytes
        # from $pc hold the trap and, where the check takes it in, the call.
        start = pc - 32
        s = find_site(start, pc + 8 - start)
        while s["trap"] < pc:
            start = s["call"]
            s = find_site(start, pc + 8 - start)
        if s["trap"] != pc:
            raise gdb.GdbError("no kCFI trap at $pc")
        # The tool explains the brk immediate, or the check's bytes (with
        # the call, where the check takes it in).
        value = ["0x%x" % s["brk"]] if "brk" in s else [s["bytes"].hex(" ")]
        print(tool("explain", "--arch", arch_conf()["name"], *value).rstrip())
        target = reg(s["target_reg"])
        print("expected type 0x%08x; target %s = 0x%x (%s)"
              % (s["expected"], s["target_reg"], target, symbol(target)))
        t = target_type(target)
        print("the target's own type: %s" % ("none (no kCFI preamble)" if t is None else "0x%08x" % t))


class BreakHandlers(gdb.Command):
    """kcfi-break-handlers: hardware breakpoints on the CFI trap handlers."""

    def __init__(self):
        super().__init__("kcfi-break-handlers", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        for func in (arch_conf()["cfi_handler"], "report_cfi_failure"):
            gdb.execute("hbreak " + func)


for command in (Preamble, Site, StepToTrap, Explain, BreakHandlers):
    command()
