/* Benchmark of the VNC display's rendering: full 1024x768 framebuffer updates scaled into a 200x60 pane
 * (fbcells area averaging + the escape sequences for the changed cells), and a typical incremental update (one
 * line of text typed on a console: a 720x16 strip). Prints frames/s, CPU per update and bytes per frame. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "console/fbcells.h"
#include "core/buf.h"

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t seed = 1;
static uint32_t rnd(void)
{
	seed = seed * 1103515245u + 12345u;
	return seed >> 8;
}

/* a desktop-like frame: flat windows, gradients, "text" speckles; t moves everything */
static void paint(uint8_t *p, int w, int h, int t, int noise)
{
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			uint8_t *q = p + ((size_t)y * (size_t)w + (size_t)x) * 4;
			if (noise) {
				uint32_t r = rnd();
				q[0] = (uint8_t)r, q[1] = (uint8_t)(r >> 8), q[2] = (uint8_t)(r >> 16);
				continue;
			}
			int xx = x + t * 7, yy = y + t * 3;
			bool win = ((xx / 256) + (yy / 192)) % 3 == 0;
			bool text = win && (yy % 16) < 10 && ((xx * 7 + yy * 13) % 11) < 3;
			q[0] = text ? 0 : win ? 0xee : (uint8_t)(xx / 4);
			q[1] = text ? 0 : win ? 0xee : (uint8_t)(yy / 3);
			q[2] = text ? 0 : win ? 0xee : 0x80;
		}
}

static void full(const char *what, int noise, enum fbc_colour mode, const char *mname)
{
	const int W = 1024, H = 768, frames = 120;
	uint8_t *fb = calloc((size_t)W * H, 4);
	struct fbc_src src = {fb, W, H, (size_t)W * 4};
	struct fbcells *f = fbcells_new();
	fbcells_layout(f, 200, 60, W, H, FBC_FIT, 0, 0);
	fbcells_full(f, &src);
	struct buf out;
	buf_init(&out);
	fbcells_emit(f, &out, 0, 0, mode, true);
	double paint_cpu = 0, t0 = cpu_s();
	size_t bytes = 0;
	for (int i = 0; i < frames; i++) {
		double p0 = cpu_s();
		paint(fb, W, H, i + 1, noise);
		paint_cpu += cpu_s() - p0;
		fbcells_update(f, &src, 0, 0, W, H);
		buf_reset(&out);
		bytes += fbcells_emit(f, &out, 0, 0, mode, false);
	}
	double cpu = cpu_s() - t0 - paint_cpu;
	printf("  full 1024x768 -> 200x60, %-8s %-10s %7.0f frames/s  %6.2f ms/frame  %8zu bytes/frame\n", what, mname,
	       frames / cpu, cpu * 1000 / frames, bytes / frames);
	buf_free(&out);
	fbcells_free(f);
	free(fb);
}

static void incremental(enum fbc_colour mode, const char *mname)
{
	const int W = 720, H = 400, n = 2000;
	uint8_t *fb = calloc((size_t)W * H, 4);
	struct fbc_src src = {fb, W, H, (size_t)W * 4};
	struct fbcells *f = fbcells_new();
	fbcells_layout(f, 200, 60, W, H, FBC_FIT, 0, 0);
	fbcells_full(f, &src);
	struct buf out;
	buf_init(&out);
	fbcells_emit(f, &out, 0, 0, mode, true);
	size_t bytes = 0;
	double t0 = cpu_s();
	for (int i = 0; i < n; i++) {
		/* one 9x16 glyph typed at the prompt line, as the VGA text console sends it */
		int x = (i * 9) % (W - 9), y = 16 * ((i / 80) % 25);
		for (int j = 0; j < 16; j++)
			for (int k = 0; k < 9; k++) {
				uint8_t v = (uint8_t)(((j + k + i) % 3) ? 0xaa : 0);
				uint8_t *q = fb + ((size_t)(y + j) * W + (size_t)(x + k)) * 4;
				q[0] = q[1] = q[2] = v;
			}
		fbcells_update(f, &src, x, y, 9, 16);
		buf_reset(&out);
		bytes += fbcells_emit(f, &out, 0, 0, mode, false);
	}
	double cpu = cpu_s() - t0;
	printf("  incremental 9x16 glyph (720x400 -> 200x60), %-10s %6.1f us CPU/update  %5zu bytes/update\n", mname,
	       cpu * 1e6 / n, bytes / n);
	buf_free(&out);
	fbcells_free(f);
	free(fb);
}

int main(void)
{
	full("desktop", 0, FBC_TRUECOLOUR, "truecolour");
	full("desktop", 0, FBC_256, "256");
	full("noise", 1, FBC_TRUECOLOUR, "truecolour");
	full("noise", 1, FBC_256, "256");
	incremental(FBC_TRUECOLOUR, "truecolour");
	incremental(FBC_256, "256");
	return 0;
}
