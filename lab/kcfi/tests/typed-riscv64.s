# A typed assembly function as the kernel's SYM_TYPED_FUNC_START emits it:
# the word before the entry is a relocation against
# __kcfi_typeid_asm_typed2, defined by C code taking the address.
	.text
	.balign	4
	.4byte	__kcfi_typeid_asm_typed2
	.globl	asm_typed2
	.type	asm_typed2, %function
asm_typed2:
	ret
	.size	asm_typed2, .-asm_typed2
