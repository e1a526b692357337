# A typed assembly function as the kernel's SYM_TYPED_FUNC_START emits it:
# the preamble's id is a relocation against __kcfi_typeid_asm_typed2,
# which C code elsewhere defines by taking the function's address.
	.text
	.globl	__cfi_asm_typed2
	.type	__cfi_asm_typed2, @function
__cfi_asm_typed2:
	.fill	11, 1, 0x90
	.byte	0xb8
	.long	__kcfi_typeid_asm_typed2
	.size	__cfi_asm_typed2, .-__cfi_asm_typed2
	.globl	asm_typed2
	.type	asm_typed2, @function
asm_typed2:
	ret
	.size	asm_typed2, .-asm_typed2
