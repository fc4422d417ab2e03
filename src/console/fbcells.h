/* fbcells: a framebuffer drawn in terminal cells. Each cell shows two stacked pixels with the upper half block
 * U+2580 (foreground = top pixel, background = bottom pixel). The framebuffer is scaled into the grid with area
 * averaging (fit, aspect kept, the default) or shown 1:1 with panning. After a damaged rectangle only the cells it
 * touches are recomputed, and they come out exactly as a full redraw would make them. Pure: no curses, no I/O;
 * fbcells_emit() turns the changed cells into terminal escape sequences in a buffer. */
#ifndef KVCON_CONSOLE_FBCELLS_H
#define KVCON_CONSOLE_FBCELLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;

/* A source framebuffer: 4 bytes a pixel in memory order R, G, B, unused; stride in bytes. */
struct fbc_src {
	const uint8_t *pix;
	int w, h;
	size_t stride;
};

/* Colours are 0xRRGGBB. fg is the top half of the cell, bg the bottom half. */
struct fbc_cell {
	uint32_t fg, bg;
};

enum fbc_scale { FBC_FIT, FBC_ONE };
enum fbc_colour { FBC_TRUECOLOUR, FBC_256, FBC_MONO };

struct fbcells;

struct fbcells *fbcells_new(void);
void fbcells_free(struct fbcells *f); /* NULL is ignored */

/* Sets the grid (cols x rows cells), the framebuffer size, the scale mode and, for FBC_ONE, the pan offset in
 * framebuffer pixels (clamped so the view stays on the framebuffer). When anything changed, the next
 * fbcells_update() recomputes every cell. */
void fbcells_layout(struct fbcells *f, int cols, int rows, int fb_w, int fb_h, enum fbc_scale mode, int pan_x,
		    int pan_y);
/* The VNC menu's view keys, shared by the dashboard pane and `kvcon vnc`: s toggles fit / 1:1, h j k l pan by a
 * quarter of the width / half the height of a cols x rows view. Returns false (nothing changed) for other keys. */
bool fbcells_view_key(int key, int cols, int rows, enum fbc_scale *scale, int *pan_x, int *pan_y);
/* Recomputes every cell from src. */
void fbcells_full(struct fbcells *f, const struct fbc_src *src);
/* Recomputes only the cells whose pixels the framebuffer rectangle (x, y, w, h) touches (clipped); a full
 * recompute when the layout changed since the last one. */
void fbcells_update(struct fbcells *f, const struct fbc_src *src, int x, int y, int w, int h);

int fbcells_cols(const struct fbcells *f);
int fbcells_rows(const struct fbcells *f);
/* The cell grid, row-major, cols * rows cells. */
const struct fbc_cell *fbcells_grid(const struct fbcells *f);
/* The pan offset actually used (after clamping), in framebuffer pixels. */
void fbcells_pan(const struct fbcells *f, int *pan_x, int *pan_y);
/* Number of cells changed since the last fbcells_emit() or fbcells_clear_dirty(). */
size_t fbcells_ndirty(const struct fbcells *f);
void fbcells_clear_dirty(struct fbcells *f);

/* Appends the escape sequences that draw the changed cells (all cells when all is true) with the grid's top-left
 * corner at terminal position (top, left), 0-based; clears the dirty marks. Ends with SGR 0. Returns the number of
 * bytes appended. */
size_t fbcells_emit(struct fbcells *f, struct buf *out, int top, int left, enum fbc_colour mode, bool all);

/* Maps a cell (and which half: 0 top, 1 bottom) to the framebuffer pixel at its centre, for pointer events.
 * Returns false when the cell shows no part of the framebuffer (letterbox); *x, *y are then clamped onto it. */
bool fbcells_cell_to_fb(const struct fbcells *f, int col, int row, int half, int *x, int *y);

/* A colour mode by name, as `kvcon vnc --colors` takes it: truecolor, truecolour, 24bit, 256, mono, ascii.
 * Returns false for any other name. */
bool fbcells_colour_parse(const char *name, enum fbc_colour *mode);

/* xterm's 256-colour palette: the nearest of the 6x6x6 cube (16..231) and the grey ramp (232..255). */
uint8_t fbcells_xterm256(uint32_t rgb);
/* The ASCII density character for a cell (mean luminance of both halves), for terminals without colour. */
char fbcells_ascii(struct fbc_cell c);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
uint32_t fbcells_xterm256_rgb(uint8_t idx);

#endif
