/* Follows libvterm 0.1.x's parser byte by byte (same states and transitions as its parser.c) and the few
 * sequences that change how ASCII is printed, so the pane knows when plain text may bypass libvterm. */
#include "console/vtmirror.h"

#include <string.h>

/* libvterm's parser states */
enum { M_NORMAL, M_ESC, M_CSI_LEADER, M_CSI_ARGS, M_CSI_INTERMED, M_STRING, M_ESC_IN_STRING };

#define M_MAX_COLLECT 15 /* libvterm keeps at most this many intermediates or leader bytes */

void vtmirror_init(struct vtmirror *m)
{
	memset(m, 0, sizeof *m);
	m->arg0 = -1;
}

static void hard_reset(struct vtmirror *m)
{
	m->gl = 0;
	memset(m->g_other, 0, sizeof m->g_other);
	m->origin = false;
}

static void on_control(struct vtmirror *m, uint8_t c)
{
	if (c == 0x0e) /* LS1 */
		m->gl = 1;
	else if (c == 0x0f) /* LS0 */
		m->gl = 0;
}

static void on_escape(struct vtmirror *m, uint8_t final)
{
	if (m->nintermed == 0) {
		if (final == 'c') /* RIS */
			hard_reset(m);
		else if (final == 'n') /* LS2 */
			m->gl = 2;
		else if (final == 'o') /* LS3 */
			m->gl = 3;
		return;
	}
	if (m->nintermed == 1 && m->intermed0 >= '(' && m->intermed0 <= '+') {
		/* SCS: only US ASCII ('B') is known to print ASCII as itself; libvterm keeps the old set for finals it
		 * does not know, but assuming a change is the safe side */
		m->g_other[m->intermed0 - '('] = final != 'B';
	}
}

static void on_csi(struct vtmirror *m, uint8_t final)
{
	if (m->arg0 != 6)
		return;
	if (final == 'h') /* DECOM set (whatever the leader: the safe side) */
		m->origin = true;
	else if (final == 'l' && m->nleader == 1 && m->leader0 == '?' && m->nintermed == 0)
		m->origin = false;
}

static void collect_intermed(struct vtmirror *m, uint8_t c)
{
	if (m->nintermed < M_MAX_COLLECT) {
		if (m->nintermed == 0)
			m->intermed0 = (char)c;
		m->nintermed++;
	}
}

static void byte(struct vtmirror *m, uint8_t c)
{
	if (c == 0x00 || c == 0x7f) { /* skipped everywhere; a text run ends */
		m->in_text = false;
		return;
	}
	if (c == 0x18 || c == 0x1a) { /* CAN, SUB */
		m->state = M_NORMAL;
		m->in_text = false;
		return;
	}
	if (c == 0x1b) {
		m->nintermed = 0;
		m->state = m->state == M_STRING ? M_ESC_IN_STRING : M_ESC;
		m->in_text = false;
		return;
	}
	if (c < 0x20 && !(c == 0x07 && m->state == M_STRING)) { /* C0 controls act in every state */
		on_control(m, c);
		m->in_text = false;
		return;
	}
	switch (m->state) {
	case M_ESC_IN_STRING:
		if (c == 0x5c) { /* ST */
			m->state = M_NORMAL;
			return;
		}
		m->state = M_ESC;
		/* fall through */
	case M_ESC:
		if (c == 0x50 || c == 0x5d) { /* DCS, OSC */
			m->state = M_STRING;
		} else if (c == 0x5b) { /* CSI */
			m->nleader = 0;
			m->state = M_CSI_LEADER;
		} else if (c >= 0x20 && c <= 0x2f) {
			collect_intermed(m, c);
		} else if (m->nintermed == 0 && c >= 0x40 && c < 0x60) {
			/* a C1 control in 7 bits: only SS2 and SS3 matter (they change how the next character decodes) */
			if (c == 'N' || c == 'O')
				m->single_shift = true;
			m->state = M_NORMAL;
		} else if (c >= 0x30 && c < 0x7f) {
			on_escape(m, c);
			m->state = M_NORMAL;
		}
		return;
	case M_CSI_LEADER:
		if (c >= 0x3c && c <= 0x3f) {
			if (m->nleader < M_MAX_COLLECT) {
				if (m->nleader == 0)
					m->leader0 = (char)c;
				m->nleader++;
			}
			return;
		}
		m->nargs = 0;
		m->arg0 = -1;
		m->state = M_CSI_ARGS;
		/* fall through */
	case M_CSI_ARGS:
		if (c >= '0' && c <= '9') {
			if (m->nargs == 0) {
				if (m->arg0 < 0)
					m->arg0 = 0;
				if (m->arg0 < 100000)
					m->arg0 = m->arg0 * 10 + (c - '0');
			}
			return;
		}
		if (c == ':' || c == ';') {
			if (m->nargs < 255)
				m->nargs++;
			return;
		}
		m->nintermed = 0;
		m->state = M_CSI_INTERMED;
		/* fall through */
	case M_CSI_INTERMED:
		if (c >= 0x20 && c <= 0x2f) {
			collect_intermed(m, c);
			return;
		}
		if (c >= 0x40 && c <= 0x7e)
			on_csi(m, c);
		m->state = M_NORMAL; /* dispatched, or an invalid CSI that ends here */
		return;
	case M_STRING:
		if (c == 0x07) /* BEL ends OSC and DCS (0x9c does not in UTF-8 mode) */
			m->state = M_NORMAL;
		return;
	default: /* M_NORMAL: text */
		m->in_text = true;
		if (c < 0x80) /* an ASCII character always uses up a single shift */
			m->single_shift = false;
		return;
	}
}

void vtmirror_feed(struct vtmirror *m, const char *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)d[i];
		if (m->state == M_NORMAL && c >= 0x20 && c < 0x7f) {
			m->in_text = true; /* the common case */
			m->single_shift = false;
			continue;
		}
		byte(m, c);
	}
}

void vtmirror_write_end(struct vtmirror *m)
{
	m->in_text = false;
}

bool vtmirror_plain(const struct vtmirror *m)
{
	return m->state == M_NORMAL && !m->in_text && !m->g_other[m->gl & 3] && !m->origin && !m->tainted &&
	       !m->single_shift;
}
