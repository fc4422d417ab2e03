/* The panes a VM can open, one row each: the console and VNC modules fill in `open` with their constructor
 * (a view with raw input that gives focus back on Ctrl+]). */
#include <stddef.h>

#include "ui/console_view.h"
#include "ui/log_view.h"
#include "ui/view.h"
#include "ui/vnc_view.h"

const struct view_pane_entry view_panes[] = {
	{ 'c', "console", "serial console of the VM in a pane (Ctrl+] leaves)", console_view_open, false },
	{ 'v', "vnc", "VNC display of the VM in a pane (Ctrl+] leaves)", vnc_view_open, false },
	{ 'l', "logs", "container log of the VM's launcher, the VMI's or the pod itself in a pane (follow, wrap, search)",
	  log_view_open, true },
};
const size_t view_npanes = sizeof view_panes / sizeof view_panes[0];
