# KCFI Lab: one gdb command per exercise that uses gdb, loaded with the
# lab's other commands by ./run.sh --gdb (by hand: source this file after
# gdb-scripts/kcfi.py). Each sets the exercise's breakpoints and says
# what to do next; "help ex04" and friends describe them.

define ex04
  hbreak lkdtm_indirect_call
  echo Exercise 04: breakpoint set on lkdtm_indirect_call.\n
  echo 1. continue, then type "lkdtm CFI_FORWARD_PROTO" in the console pane.\n
  echo 2. First stop, matching target: kcfi-site, then kcfi-step-to-trap (r10 ends at 0).\n
  echo 3. continue: second stop, mismatching target. kcfi-step-to-trap, kcfi-explain.\n
  echo 4. kcfi-break-handlers, then continue: handle_cfi_failure, report_cfi_failure.\n
end
document ex04
Exercise 04 (x86_64): break on lkdtm_indirect_call and walk the
mov/add/je/ud2 check, then into the trap handlers.
end

define ex05
  hbreak lkdtm_indirect_call
  echo Exercise 05: breakpoint set on lkdtm_indirect_call.\n
  echo 1. continue, then type "lkdtm CFI_FORWARD_PROTO" in the console pane.\n
  echo 2. continue to the second stop (the mismatching target).\n
  echo 3. kcfi-step-to-trap: w16 holds the target's type, w17 the expected one.\n
  echo 4. kcfi-explain decodes the brk immediate; kcfi-break-handlers stops in cfi_handler.\n
end
document ex05
Exercise 05 (arm64): break on lkdtm_indirect_call and walk the
ldur/movk/movk/cmp/b.eq/brk check, then into cfi_handler.
end

define ex06
  kcfi-break-handlers
  echo Exercise 06: breakpoints on the CFI trap handlers and report_cfi_failure.\n
  echo continue, type "lkdtm CFI_FORWARD_PROTO" in the console, then bt at each stop.\n
end
document ex06
Exercise 06: stop in the trap handler and report_cfi_failure to see
who prints each line of the oops.
end
