/* The accelerator probe: its firmware image is well formed, and the probe guest runs to its end under TCG
 * (QEMU's emulator: if it does not, the image is wrong and a working KVM would be judged broken too). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/kvmprobe.h"
#include "t.h"

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

	/* a QEMU that does not exist: not ok, and the reason names it */
	T_CHECK(!kvmprobe_run("/nonexistent/qemu", "kvm", &r));
	T_EQ_STR(r.phase, "");
	T_CHECK(r.why && strstr(r.why, "/nonexistent/qemu"));
	kvmprobe_report_clear(&r);
	T_CHECK(r.why == NULL);
	kvmprobe_report_clear(NULL);
	return T_DONE();
}
