/* The accelerator probe: its firmware image is well formed, and the probe guest runs to its end under TCG
 * (QEMU's emulator: if it does not, the image is wrong and a working KVM would be judged broken too). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/host.h"
#include "engine/kvmprobe.h"
#include "t.h"

/* host_kvm_works with a cache line already there: returns the verdict and the cache after the call */
static bool cached(const char *path, const char *line, char **why, char **after)
{
	util_write_file_atomic(path, line, strlen(line), 0600);
	*why = NULL;
	bool ok = host_kvm_works(path, why);
	*after = util_read_file(path, NULL);
	return ok;
}

static bool have_qemu(void)
{
	return system("command -v qemu-system-x86_64 >/dev/null 2>&1") == 0;
}

int main(void)
{
	size_t len = 0;
	unsigned char *img = kvmprobe_image_new(&len);
#if defined(__x86_64__)
	T_EQ_INT(len, 0x10000);
	T_CHECK(img != NULL);
	if (img) {
		/* reset vector: a near jump that wraps to offset 0, where the code starts with cli */
		T_EQ_INT(img[0xfff0], 0xe9);
		T_EQ_INT((uint16_t)(0xfff3 + (img[0xfff1] | img[0xfff2] << 8)), 0);
		T_EQ_INT(img[0], 0xfa);
		T_CHECK(memmem(img, len, "KVCON-PROBE pm", 14) != NULL);
	}
#endif
	free(img);

	struct kvmprobe_report r;
	if (have_qemu()) {
		T_CHECK(kvmprobe_run(NULL, "tcg", &r));
		T_EQ_STR(r.phase, "ok");
		T_CHECK(r.why == NULL);
		T_CHECK(r.start_ms > 0 && r.run_ms < KVMPROBE_BUDGET_MS);
		fprintf(stderr, "tcg: long mode after %u ms, done %u ms later\n", r.start_ms, r.run_ms);
		kvmprobe_report_clear(&r);
	} else {
		fprintf(stderr, "qemu-system-x86_64 missing: the TCG run is skipped\n");
	}

	/* the cache: this boot's verdict of this probe version is used as it is, with its reason */
	char boot[64] = "", *b = util_read_file("/proc/sys/kernel/random/boot_id", NULL);
	if (b) {
		snprintf(boot, sizeof boot, "%.*s", (int)strcspn(b, "\n"), b);
		free(b);
	}
	char dir[] = "/tmp/kvcon-kvmprobe.XXXXXX";
	if (boot[0] && mkdtemp(dir)) {
		char *path = util_path_join(dir, "probe"), *why, *after, *line;
		line = xasprintf("%s probe2 broken the vCPU crawls\n", boot);
		T_CHECK(!cached(path, line, &why, &after));
		T_CHECK(why && strstr(why, "the vCPU crawls (probed earlier this boot)"));
		T_EQ_STR(after, line);
		free(why);
		free(after);
		free(line);
		line = xasprintf("%s probe2 ok \n", boot);
		T_CHECK(cached(path, line, &why, &after));
		T_CHECK(why == NULL);
		free(why);
		free(after);
		free(line);
		/* the first probe's verdict (SeaBIOS under KVM: "ok" where guests never ran) is not trusted */
		line = xasprintf("%s ok\n", boot);
		bool ok = cached(path, line, &why, &after);
		T_CHECK(after && strstr(after, " probe2 ") && strstr(after, ok ? " probe2 ok" : " probe2 broken"));
		fprintf(stderr, "this machine: KVM %s%s\n", ok ? "works" : "unusable: ", ok ? "" : why);
		free(why);
		free(after);
		free(line);
		unlink(path);
		rmdir(dir);
		free(path);
	}

	/* a QEMU that does not exist: not ok, and the reason names it */
	T_CHECK(!kvmprobe_run("/nonexistent/qemu", "kvm", &r));
	T_EQ_STR(r.phase, "");
	T_CHECK(r.why && strstr(r.why, "/nonexistent/qemu"));
	kvmprobe_report_clear(&r);
	T_CHECK(r.why == NULL);
	kvmprobe_report_clear(NULL);
	return T_DONE();
}
