/* libFuzzer harness for the containerDisk layer reader (engine/oci.c oci_layer_extract_mem: libarchive's tar,
 * gzip and zstd readers behind kvcon's entry filter): arbitrary bytes as a layer; only a disk/NAME.qcow2|img|raw
 * regular file is ever written, within the cap and the free space its header was checked against, never
 * allocating more than its data (zero blocks are holes), and a refused layer writes nothing. Seeds in
 * tests/fuzz/corpus/ocilayer/ (tar, tar.gz, a traversal attempt, a symlinked disk, a sparse entry, a gzip of
 * zeros, a stream longer than its header). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX (1u << 20)
#define AVAIL (768u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	if (fd < 0)
		fd = memfd_create("fuzz_ocilayer", 0);
	if (fd < 0 || size > 4u << 20 || ftruncate(fd, 0) < 0)
		return 0;
	char *name = NULL, *err = NULL;
	const struct oci_unpack u = { .cap = MAX, .avail = AVAIL };
	int rc = oci_layer_extract_mem(data, size, fd, &u, &name, &err);
	struct stat st;
	if (fstat(fd, &st) < 0)
		abort();
	/* whatever happened: no more than the bounds, no more allocated than the size (pages of the memfd) */
	if ((uint64_t)st.st_size > AVAIL || (uint64_t)st.st_blocks * 512 > (((uint64_t)st.st_size + 4095) & ~4095ull))
		abort();
	if (rc == 1 && name == NULL)
		abort();
	free(name);
	free(err);
	return 0;
}
