/*
 * Runs a libFuzzer target over files without libFuzzer: one process for
 * many inputs, so `make check` can push hundreds of corrupted ELF files
 * through the AddressSanitizer build quickly.
 *   replay FILE...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	int n = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		FILE *f;
		uint8_t *buf;
		long len;

		if (stat(argv[i], &st) != 0 || !S_ISREG(st.st_mode))
			continue; /* directories and the like */
		f = fopen(argv[i], "rb");
		if (!f || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
		    fseek(f, 0, SEEK_SET) != 0) {
			perror(argv[i]);
			return 2;
		}
		/* Exactly sized, so ASan sees any read past the end. */
		buf = malloc(len ? (size_t)len : 1);
		if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
			perror(argv[i]);
			return 2;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)len);
		free(buf);
		n++;
	}
	printf("replayed %d inputs\n", n);
	return 0;
}
