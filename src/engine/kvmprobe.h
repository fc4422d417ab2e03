/* Whether an accelerator really runs guests here: kvcon boots a tiny guest of its own (no kernel, no firmware)
 * under qemu-system-x86_64 and times it. The guest goes from the reset vector through protected mode into long
 * mode with paging, runs a compute loop and writes memory through its page tables, then takes local APIC timer
 * interrupts, printing a word to COM1 after each phase. A KVM that answers its ioctls but runs a vCPU a thousand
 * times too slowly (seen on nested hosts: SeaBIOS still boots, a Linux kernel never prints a line) fails here. */
#ifndef KVCON_ENGINE_KVMPROBE_H
#define KVCON_ENGINE_KVMPROBE_H

#include <stdbool.h>
#include <stddef.h>

/* From long mode to the end: TCG needs about 0.1 s, a working KVM a few milliseconds. */
#define KVMPROBE_BUDGET_MS 1500
/* From exec to long mode (QEMU's own start-up included, on a loaded machine). */
#define KVMPROBE_START_MS 5000

struct kvmprobe_report {
	bool ok;
	char phase[8];     /* the last phase the guest reported: "", "pm", "lm", "cpu", "ok", "fault" */
	unsigned start_ms; /* exec to long mode (0 when not reached) */
	unsigned run_ms;   /* long mode to the end or to the give-up */
	char *why;         /* when !ok: what failed, one line (caller frees via kvmprobe_report_clear) */
};

/* Boots the probe guest under `qemu -accel ACCEL` ("kvm" or "tcg"; qemu NULL: qemu-system-x86_64 on $PATH, else
 * qemu-kvm)
 * and fills r. Blocks for at most KVMPROBE_START_MS + KVMPROBE_BUDGET_MS. Returns r->ok. */
bool kvmprobe_run(const char *qemu, const char *accel, struct kvmprobe_report *r);
void kvmprobe_report_clear(struct kvmprobe_report *r);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* The 64 KiB image QEMU maps as its firmware (-bios); the reset vector jumps to the probe code. Caller frees. */
unsigned char *kvmprobe_image_new(size_t *len);

#endif
