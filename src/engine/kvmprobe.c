/* The accelerator probe: a tiny x86 guest assembled into kvcon itself, booted as QEMU's firmware, timed per phase. */
#include "engine/kvmprobe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"

#define IMAGE_SIZE 0x10000 /* QEMU takes firmware in 64 KiB units; mapped to end at 4 GiB */
#define RESET_OFF 0xfff0   /* the reset vector, CS base 0xffff0000 */

#if defined(__x86_64__)
/* The guest. It runs from the firmware ROM at 0xffff0000 (code at offset 0), so every absolute address is written
 * as (label - start + 0xffff0000): assemble-time constants, nothing for the linker to relocate. Page tables, the
 * IDT, a counter and the stack live in the first megabyte of guest RAM. It talks only through COM1 (0x3f8) and
 * needs no device beyond the machine's own, so any QEMU build runs it. Local labels are .L-prefixed: nothing leaks
 * into C's namespace. */
__asm__(
	".pushsection .rodata\n"
	".globl kvmprobe_code\n"
	".hidden kvmprobe_code\n"
	".globl kvmprobe_code_end\n"
	".hidden kvmprobe_code_end\n"
	".set .LBASE, 0xffff0000\n"
	".set .LPT, 0x1000\n"     /* PML4; PDPT at +0x1000; four page directories at +0x2000 */
	".set .LIDT, 0x7000\n"    /* 256 gates of 16 bytes */
	".set .LTICKS, 0x8000\n"  /* timer interrupts taken */
	".set .LSTACK, 0x9f000\n"
	".set .LAPIC, 0xfee00000\n"
	"kvmprobe_code:\n"
	".code16\n"
	"	cli\n"
	"	lgdtl %cs:(.Lgdtr - kvmprobe_code)\n"
	"	movl %cr0, %eax\n"
	"	andl $0x9fffffff, %eax\n" /* caches on (CD and NW off) */
	"	orl $1, %eax\n"
	"	movl %eax, %cr0\n"
	"	.byte 0x66, 0xea\n"       /* ljmpl $0x08, $.Lpm32 */
	"	.long .Lpm32 - kvmprobe_code + .LBASE\n"
	"	.word 0x08\n"
	".code32\n"
	".Lpm32:\n"
	"	movl $0x10, %eax\n"
	"	movl %eax, %ds\n"
	"	movl %eax, %es\n"
	"	movl %eax, %ss\n"
	"	movl $(.Lmsg_pm - kvmprobe_code + .LBASE), %esi\n"
	"	movl $(.Lmsg_lm - .Lmsg_pm), %ecx\n"
	"	movl $0x3f8, %edx\n"
	"	rep outsb\n"
	"	movl $.LPT, %edi\n"      /* an identity map of the low 4 GiB in 2 MiB pages */
	"	xorl %eax, %eax\n"
	"	movl $(6 * 4096 / 4), %ecx\n"
	"	rep stosl\n"
	"	movl $(.LPT + 0x1003), .LPT\n"
	"	movl $(.LPT + 0x2003), .LPT + 0x1000\n"
	"	movl $(.LPT + 0x3003), .LPT + 0x1008\n"
	"	movl $(.LPT + 0x4003), .LPT + 0x1010\n"
	"	movl $(.LPT + 0x5003), .LPT + 0x1018\n"
	"	movl $(.LPT + 0x2000), %edi\n"
	"	movl $0x83, %eax\n"
	"	movl $2048, %ecx\n"
	".Lmap:\n"
	"	movl %eax, (%edi)\n"
	"	addl $0x200000, %eax\n"
	"	addl $8, %edi\n"
	"	loop .Lmap\n"
	"	movl %cr4, %eax\n"
	"	orl $0x20, %eax\n"        /* PAE */
	"	movl %eax, %cr4\n"
	"	movl $.LPT, %eax\n"
	"	movl %eax, %cr3\n"
	"	movl $0xc0000080, %ecx\n" /* EFER.LME */
	"	rdmsr\n"
	"	orl $0x100, %eax\n"
	"	wrmsr\n"
	"	movl %cr0, %eax\n"
	"	orl $0x80000000, %eax\n"  /* paging on: long mode */
	"	movl %eax, %cr0\n"
	"	ljmp $0x18, $(.Llm64 - kvmprobe_code + .LBASE)\n"
	".code64\n"
	".Llm64:\n"
	"	movl $.LSTACK, %esp\n"
	"	movl $(.Lmsg_lm - kvmprobe_code + .LBASE), %esi\n"
	"	movl $(.Lmsg_cpu - .Lmsg_lm), %ecx\n"
	"	movl $0x3f8, %edx\n"
	"	rep outsb\n"
	"	movl $10000000, %ecx\n"   /* compute: milliseconds on any working accelerator */
	".Lspin:\n"
	"	decl %ecx\n"
	"	jnz .Lspin\n"
	"	movl $0x100000, %edi\n"   /* memory: every cache line of 1..4 MiB, through the page tables */
	".Ltouch:\n"
	"	movq %rdi, (%rdi)\n"
	"	addq $64, %rdi\n"
	"	cmpq $0x400000, %rdi\n"
	"	jb .Ltouch\n"
	"	movl $(.Lmsg_cpu - kvmprobe_code + .LBASE), %esi\n"
	"	movl $(.Lmsg_ok - .Lmsg_cpu), %ecx\n"
	"	rep outsb\n"
	"	movl $(.Lfault - kvmprobe_code + .LBASE), %eax\n" /* every vector faults but the timer and spurious */
	"	call .Lgate\n"
	"	movl $.LIDT, %edi\n"
	"	movl $256, %ecx\n"
	".Lfill:\n"
	"	movq %rbx, (%rdi)\n"
	"	movq $0, 8(%rdi)\n"
	"	addq $16, %rdi\n"
	"	loop .Lfill\n"
	"	movl $(.Ltimer - kvmprobe_code + .LBASE), %eax\n"
	"	call .Lgate\n"
	"	movq %rbx, .LIDT + 16 * 0x40\n"
	"	movl $(.Lspurious - kvmprobe_code + .LBASE), %eax\n"
	"	call .Lgate\n"
	"	movq %rbx, .LIDT + 16 * 0xff\n"
	"	lidt .Lidtr(%rip)\n"
	"	movl $0, .LTICKS\n"
	"	movl $.LAPIC, %esi\n"     /* local APIC timer: periodic, vector 0x40, 1e6 bus cycles (1 ms in QEMU) */
	"	movl $0x1ff, 0xf0(%rsi)\n"
	"	movl $0xb, 0x3e0(%rsi)\n"
	"	movl $0x20040, 0x320(%rsi)\n"
	"	movl $1000000, 0x380(%rsi)\n"
	"	sti\n"
	".Lwait:\n"
	"	hlt\n"
	"	cmpl $10, .LTICKS\n"
	"	jb .Lwait\n"
	"	cli\n"
	"	movl $0x10000, 0x320(%rsi)\n" /* timer masked */
	"	movl $(.Lmsg_ok - kvmprobe_code + .LBASE), %esi\n"
	"	movl $(.Lmsg_fault - .Lmsg_ok), %ecx\n"
	"	movl $0x3f8, %edx\n"
	"	rep outsb\n"
	".Lstop:\n"                 /* the host ends QEMU once it has read the last word */
	"	cli\n"
	"	hlt\n"
	"	jmp .Lstop\n"
	".Lgate:\n"                 /* rbx = a 64-bit interrupt gate to the handler at eax (below 4 GiB) */
	"	movl %eax, %ebx\n"
	"	andl $0xffff, %ebx\n"
	"	shrl $16, %eax\n"
	"	shlq $48, %rax\n"
	"	orq %rax, %rbx\n"
	"	movabsq $0x00008e0000180000, %rax\n"
	"	orq %rax, %rbx\n"
	"	ret\n"
	".Ltimer:\n"
	"	pushq %rax\n"
	"	incl .LTICKS\n"
	"	movl $(.LAPIC + 0xb0), %eax\n" /* end of interrupt */
	"	movl $0, (%rax)\n"
	"	popq %rax\n"
	"	iretq\n"
	".Lspurious:\n"
	"	iretq\n"
	".Lfault:\n"
	"	movl $(.Lmsg_fault - kvmprobe_code + .LBASE), %esi\n"
	"	movl $(.Lmsg_end - .Lmsg_fault), %ecx\n"
	"	movl $0x3f8, %edx\n"
	"	rep outsb\n"
	"	jmp .Lstop\n"
	".Lmsg_pm: .ascii \"KVCON-PROBE pm\"\n"
	".Lmsg_lm: .ascii \" lm\"\n"
	".Lmsg_cpu: .ascii \" cpu\"\n"
	".Lmsg_ok: .ascii \" ok\\n\"\n"
	".Lmsg_fault: .ascii \" fault\\n\"\n"
	".Lmsg_end:\n"
	"	.p2align 3\n"
	".Lgdt:\n"
	"	.quad 0\n"
	"	.quad 0x00cf9b000000ffff\n" /* 0x08: flat 32-bit code */
	"	.quad 0x00cf93000000ffff\n" /* 0x10: flat data */
	"	.quad 0x00af9b000000ffff\n" /* 0x18: 64-bit code */
	".Lgdtr:\n"
	"	.word .Lgdtr - .Lgdt - 1\n"
	"	.long .Lgdt - kvmprobe_code + .LBASE\n"
	".Lidtr:\n"
	"	.word 256 * 16 - 1\n"
	"	.quad .LIDT\n"
	"kvmprobe_code_end:\n"
	".popsection\n");

extern const unsigned char kvmprobe_code[], kvmprobe_code_end[];

unsigned char *kvmprobe_image_new(size_t *len)
{
	unsigned char *img = xcalloc(1, IMAGE_SIZE);
	size_t n = (size_t)(kvmprobe_code_end - kvmprobe_code);
	memcpy(img, kvmprobe_code, n < RESET_OFF ? n : RESET_OFF);
	/* at the reset vector: jmp near to offset 0 (IP wraps within the 64 KiB segment) */
	uint16_t rel = (uint16_t)(0x10000 - (RESET_OFF + 3));
	img[RESET_OFF] = 0xe9;
	img[RESET_OFF + 1] = (unsigned char)(rel & 0xff);
	img[RESET_OFF + 2] = (unsigned char)(rel >> 8);
	*len = IMAGE_SIZE;
	return img;
}
#else
unsigned char *kvmprobe_image_new(size_t *len)
{
	*len = 0;
	return NULL; /* KVM for an x86_64 guest needs an x86_64 host */
}
#endif

void kvmprobe_report_clear(struct kvmprobe_report *r)
{
	if (r == NULL)
		return;
	free(r->why);
	memset(r, 0, sizeof *r);
}

/* The phase words the guest prints after "KVCON-PROBE", in order, and what it means when one is the last seen. */
static const struct {
	const char *word;
	const char *stuck, *tail;
} phases[] = {
	{ "pm", "did not reach long mode with paging", "" },
	{ "lm", "did not finish a 10M-step loop", " (TCG: ~0.1 s); its vCPU runs far too slowly" },
	{ "cpu", "received no local APIC timer interrupt", "" },
	{ "ok", NULL, NULL },
};

static void see(struct kvmprobe_report *r, const char *out, uint64_t t0, uint64_t *t_lm)
{
	const char *p = strstr(out, "KVCON-PROBE");
	if (p == NULL)
		return;
	if (strstr(p, " fault")) {
		snprintf(r->phase, sizeof r->phase, "fault");
		return;
	}
	for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++) {
		char w[16];
		snprintf(w, sizeof w, " %s", phases[i].word);
		if (strstr(p, w) == NULL)
			break;
		snprintf(r->phase, sizeof r->phase, "%s", phases[i].word);
	}
	if (*t_lm == 0 && r->phase[0] && strcmp(r->phase, "pm") != 0) { /* lm or a later phase */
		*t_lm = util_now_ms();
		r->start_ms = (unsigned)(*t_lm - t0);
	}
}

/* The QEMU to probe with when none is named: the usual name on $PATH, then where distributions that call it
 * qemu-kvm put it. */
static const char *const emulators[] = { "qemu-system-x86_64", "/usr/libexec/qemu-kvm", "/usr/bin/qemu-kvm" };

static bool runnable(const char *prog)
{
	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	const char *path = getenv("PATH");
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		char *f = xasprintf("%.*s/%s", (int)n, p, prog);
		bool ok = n > 0 && access(f, X_OK) == 0;
		free(f);
		if (ok)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

static pid_t spawn(const char *qemu, const char *accel, int img_fd, int out, int err)
{
	char bios[64], acc[32];
	snprintf(bios, sizeof bios, "/proc/self/fd/%d", img_fd);
	snprintf(acc, sizeof acc, "%s", accel);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	int null = open("/dev/null", O_RDWR);
	dup2(null, 0);
	dup2(out, 1);
	dup2(err, 2);
	/* q35: the machine every current QEMU build has (some distributions drop i440fx) */
	execlp(qemu, qemu, "-accel", acc, "-M", "q35", "-m", "32", "-nodefaults", "-no-user-config", "-display", "none",
	       "-no-reboot", "-bios", bios, "-serial", "stdio", (char *)NULL);
	_exit(127);
}

bool kvmprobe_run(const char *qemu, const char *accel, struct kvmprobe_report *r)
{
	memset(r, 0, sizeof *r);
	for (size_t i = 0; qemu == NULL && i < sizeof emulators / sizeof emulators[0]; i++)
		if (runnable(emulators[i]))
			qemu = emulators[i];
	if (qemu == NULL)
		qemu = emulators[0]; /* the error then names it */
	size_t len = 0;
	unsigned char *img = kvmprobe_image_new(&len);
	int img_fd = -1, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	pid_t pid = -1;
	struct buf o, e;
	buf_init(&o);
	buf_init(&e);
	if (img == NULL) {
		r->why = xstrdup("the probe guest is x86_64 code and this host is not x86_64");
		goto out;
	}
	/* the image goes to QEMU as /proc/self/fd/N: nothing to clean up on disk */
	img_fd = memfd_create("kvcon-kvmprobe", 0);
	if (img_fd < 0 || write(img_fd, img, len) != (ssize_t)len || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(err, O_CLOEXEC) < 0) {
		r->why = xasprintf("probe set-up: %s", strerror(errno));
		goto out;
	}
	uint64_t t0 = util_now_ms(), t_lm = 0;
	pid = spawn(qemu, accel, img_fd, out[1], err[1]);
	close(out[1]);
	close(err[1]);
	out[1] = err[1] = -1;
	if (pid < 0) {
		r->why = xasprintf("fork: %s", strerror(errno));
		goto out;
	}
	bool eof = false;
	while (!eof && strcmp(r->phase, "ok") != 0 && strcmp(r->phase, "fault") != 0) {
		uint64_t now = util_now_ms();
		uint64_t until = t_lm ? t_lm + KVMPROBE_BUDGET_MS : t0 + KVMPROBE_START_MS;
		if (now >= until)
			break;
		struct pollfd pf[2] = { { .fd = out[0], .events = POLLIN }, { .fd = err[0], .events = POLLIN } };
		if (poll(pf, 2, (int)(until - now)) <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char tmp[1024];
			ssize_t n = read(pf[i].fd, tmp, sizeof tmp);
			if (n > 0) {
				buf_add(i ? &e : &o, tmp, (size_t)n);
			} else if (i == 0) {
				eof = true; /* QEMU is gone (its stderr says why) */
			} else {
				close(err[0]);
				err[0] = -1; /* poll skips it from now on */
			}
		}
		see(r, o.data ? o.data : "", t0, &t_lm);
	}
	while (eof && err[0] >= 0) { /* QEMU has exited: the rest of its stderr is in the pipe */
		struct pollfd pf = { .fd = err[0], .events = POLLIN };
		char tmp[1024];
		ssize_t n = poll(&pf, 1, 200) > 0 ? read(err[0], tmp, sizeof tmp) : 0;
		if (n <= 0)
			break;
		buf_add(&e, tmp, (size_t)n);
	}
	if (t_lm)
		r->run_ms = (unsigned)(util_now_ms() - t_lm);
	r->ok = strcmp(r->phase, "ok") == 0;
	if (r->ok)
		goto out;
	if (strcmp(r->phase, "fault") == 0) {
		r->why = xasprintf("the probe guest took a CPU exception under %s", accel);
		goto out;
	}
	for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++)
		if (strcmp(r->phase, phases[i].word) == 0 && phases[i].stuck) {
			char when[48];
			snprintf(when, sizeof when, eof ? "before QEMU exited" : "within %u ms",
				 t_lm ? KVMPROBE_BUDGET_MS : KVMPROBE_START_MS);
			r->why = xasprintf("under %s, the probe guest %s %s%s", accel, phases[i].stuck, when,
					   phases[i].tail);
			goto out;
		}
	/* nothing from the guest: QEMU's first error line (not a warning) says why, or it never started in time */
	char *line = e.data;
	while (line && *line) {
		size_t n = strcspn(line, "\n");
		if (memmem(line, n, ": warning: ", 11) == NULL)
			break;
		line += n + (line[n] == '\n');
	}
	int st = 0;
	if (eof && waitpid(pid, &st, 0) == pid)
		pid = -1;
	if (line && *line)
		r->why = xasprintf("%.*s", (int)strcspn(line, "\n"), line); /* QEMU's lines name it */
	else if (eof && WIFEXITED(st) && WEXITSTATUS(st) == 127)
		r->why = xasprintf("%s: cannot be run", qemu);
	else if (eof)
		r->why = xasprintf("%s -accel %s: exited before the probe guest printed anything", qemu, accel);
	else
		r->why = xasprintf("%s -accel %s: the probe guest printed nothing within %u ms", qemu, accel,
				   KVMPROBE_START_MS);
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	if (img_fd >= 0)
		close(img_fd);
	free(img);
	buf_free(&o);
	buf_free(&e);
	return r->ok;
}
