/* The functions of README.md's arity listing (-fsanitize-kcfi-arity). */
struct two { long a, b; };
int f(int x) { return x + 1; }
int call(int (*fp)(int), int v) { return fp(v); }
long pair(struct two t) { return t.a + t.b; }
double half(double d) { return d / 2; }
long seven(long a, long b, long c, long d, long e, long f, long g) { return a + g; }
void *taken[] = { f, call, pair, half, seven };
