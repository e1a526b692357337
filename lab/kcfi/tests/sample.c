/*
 * A small "driver" with the indirect-call shapes KCFI cares about, compiled
 * by tests/run.sh for x86_64, aarch64 and riscv64 in several layouts and
 * scanned.
 */
struct inode;
struct file;
typedef long ssize_t;
typedef unsigned long size_t;
typedef long long loff_t;

struct file_ops {
	int (*open)(struct inode *, struct file *);
	ssize_t (*read)(struct file *, char *, size_t, loff_t *);
	ssize_t (*write)(struct file *, const char *, size_t, loff_t *);
	int (*release)(struct inode *, struct file *);
	void (*notify)(void *);
};

static int dev_open(struct inode *i, struct file *f) { return i == (void *)f; }
static int dev_release(struct inode *i, struct file *f) { return i != (void *)f; }
static ssize_t dev_read(struct file *f, char *b, size_t n, loff_t *p)
{
	(void)f; b[0] = 0; *p += (loff_t)n; return (ssize_t)n;
}
static ssize_t dev_write(struct file *f, const char *b, size_t n, loff_t *p)
{
	(void)f; *p += b[0]; return (ssize_t)n;
}
int other_open(struct inode *i, struct file *f) { return (int)((char *)i - (char *)f); }
void notify_a(void *p) { *(volatile char *)p = 1; }
void notify_b(void *p) { *(volatile char *)p = 2; }

const struct file_ops dev_ops = { dev_open, dev_read, dev_write, dev_release, notify_a };
const struct file_ops other_ops = { other_open, dev_read, dev_write, dev_release, notify_b };

/* Called directly only: no preamble expected for the static one. */
static __attribute__((noinline)) int helper(int x) { return x * 7 + 3; }

int vfs_open(const struct file_ops *ops, struct inode *i, struct file *f)
{
	int r = ops->open(i, f);

	ops->notify(f);
	return r + helper(r);
}

ssize_t vfs_rw(const struct file_ops *ops, struct file *f, char *buf, size_t n,
	       loff_t *pos, int write)
{
	if (write)
		return ops->write(f, buf, n, pos);
	return ops->read(f, buf, n, pos);
}

int vfs_release(const struct file_ops *ops, struct inode *i, struct file *f)
{
	return ops->release(i, f); /* tail call */
}

/* Callbacks of assorted types, several sharing a type. */
typedef int (*cmp_fn)(const void *, const void *);
int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
int cmp_rev(const void *a, const void *b) { return cmp_int(b, a); }
int cmp_abs(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x < 0 ? -x : x) - (y < 0 ? -y : y);
}

void sort2(int *v, cmp_fn cmp)
{
	if (cmp(&v[0], &v[1]) > 0) {
		int t = v[0];

		v[0] = v[1];
		v[1] = t;
	}
}

typedef void (*irq_fn)(int, void *);
void irq_a(int irq, void *dev) { ((volatile int *)dev)[0] = irq; }
void irq_b(int irq, void *dev) { ((volatile int *)dev)[1] = irq; }
irq_fn irq_table[] = { irq_a, irq_b };

void dispatch(int irq, void *dev, int n)
{
	for (int k = 0; k < n; k++)
		irq_table[k & 1](irq, dev);
}

long many(long (*f0)(long), long (*f1)(long, long), void (*f2)(void),
	  unsigned (*f3)(const char *, ...), char *(*f4)(char *, const char *, size_t))
{
	long r = f0(1) + f1(2, 3);

	f2();
	r += f3("%d", 4);
	return r + (long)f4((char *)0, "x", 1);
}

/* Address-taken externals: clang emits __kcfi_typeid_ symbols for them. */
extern void ext_fn(int *);
extern int ext_cb(struct file *, unsigned long);
void *const ext_refs[] = { (void *)ext_fn, (void *)ext_cb };

/* An assembly function without a preamble whose address is taken. */
__asm__(".text\n"
	".globl asm_untyped\n"
	".type asm_untyped, %function\n"
	"asm_untyped:\n"
	"	ret\n"
	".size asm_untyped, .-asm_untyped\n");
extern void asm_untyped(void);
void (*const untyped_ref)(void) = asm_untyped;

/*
 * An assembly function with a preamble, written the way the kernel's
 * SYM_TYPED_FUNC_START does: the id is the symbol __kcfi_typeid_asm_typed,
 * which clang defines here because C takes the function's address.
 */
#if defined(__x86_64__)
__asm__(".text\n"
	".globl __cfi_asm_typed\n"
	".type __cfi_asm_typed, %function\n"
	"__cfi_asm_typed:\n"
	".fill 11, 1, 0x90\n"
	".byte 0xb8\n"
	".long __kcfi_typeid_asm_typed\n"
	".size __cfi_asm_typed, .-__cfi_asm_typed\n"
	".globl asm_typed\n"
	".type asm_typed, %function\n"
	"asm_typed:\n"
	"	ret\n"
	".size asm_typed, .-asm_typed\n");
#elif defined(__aarch64__) || defined(__riscv)
__asm__(".text\n"
	".balign 4\n"
	".4byte __kcfi_typeid_asm_typed\n"
	".globl asm_typed\n"
	".type asm_typed, %function\n"
	"asm_typed:\n"
	"	ret\n"
	".size asm_typed, .-asm_typed\n");
#endif
extern void asm_typed(long);
void (*const typed_ref)(long) = asm_typed;

#if defined(__x86_64__)
/*
 * The x86_64 check's other forms: with the target in %r12 its addl needs
 * a SIB byte (a 15-byte check); with the target in %r10 the check
 * computes in %r11d. The register variable puts the target there, and
 * the empty asm after the call keeps it live in that register.
 */
void call_via_r12(void (*fp)(int *), int *p)
{
	register void (*t)(int *) __asm__("r12") = fp;

	__asm__ volatile("" : "+r"(t));
	t(p);
	__asm__ volatile("" : : "r"(t));
}

void call_via_r10(void (*fp)(int *), int *p)
{
	register void (*t)(int *) __asm__("r10") = fp;

	__asm__ volatile("" : "+r"(t));
	t(p);
	__asm__ volatile("" : : "r"(t));
}
#endif

#if defined(__riscv)
/*
 * The riscv64 check's other forms.  The expected id is lui hi20 + addiw
 * lo12: c.lui when hi20 fits in 6 signed bits, c.addiw when lo12 does,
 * no addiw when lo12 is 0, and no lui at all when hi20 is 0 (clang 19
 * then emits "addi t2, t2, lo12").  The struct names are chosen for ids
 * of each shape (kcfi hash 'void (struct s36 *)' and so on).
 */
struct s36;	/* 0xc0d9cff5: lui + c.addiw -11 */
struct s679;	/* 0xb5834000: lui alone */
struct s5308;	/* 0xfffee2cc: c.lui + addiw */
struct s27582;	/* 0x00018b87: c.lui + addiw -0x479 */
struct s242413;	/* 0xffffc00a: c.lui + c.addiw */
struct s292567;	/* 0x00000472: addi alone */
void shape_addiw_c(void (*f)(struct s36 *), struct s36 *p) { f(p); }
void shape_lui_only(void (*f)(struct s679 *), struct s679 *p) { f(p); }
void shape_lui_c(void (*f)(struct s5308 *), struct s5308 *p) { f(p); }
int shape_lui_c_neg(void (*f)(struct s27582 *), struct s27582 *p) { f(p); return 1; }
void shape_both_c(void (*f)(struct s242413 *), struct s242413 *p) { f(p); }
void shape_no_lui(void (*f)(struct s292567 *), struct s292567 *p) { f(p); }

/* With the target in t1 or t2, t3 takes that register's part. */
void call_via_t1(void (*fp)(int *), int *p)
{
	register void (*t)(int *) __asm__("t1") = fp;

	__asm__ volatile("" : "+r"(t));
	t(p);
	__asm__ volatile("" : : "r"(t));
}

void call_via_t2(void (*fp)(int *), int *p)
{
	register void (*t)(int *) __asm__("t2") = fp;

	__asm__ volatile("" : "+r"(t));
	t(p);
}
#endif

void sample_entry(void)
{
}
