/* termkeys: keysyms typed with Shift (see termkeys.h). */
#include "console/termkeys.h"

#include <string.h>

bool termkeys_needs_shift(uint32_t keysym)
{
	return (keysym >= 'A' && keysym <= 'Z') ||
	       (keysym < 0x80 && strchr("~!@#$%^&*()_+{}|:\"<>?", (int)keysym) && keysym != 0);
}
