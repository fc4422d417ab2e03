/* Unit tests for console/termkeys: which keysyms the VNC display sends with Shift pressed. */
#include <stdio.h>

#include "console/termkeys.h"
#include "t.h"

int main(void)
{
	T_CHECK(termkeys_needs_shift('A') && termkeys_needs_shift('Z') && termkeys_needs_shift('>') &&
		termkeys_needs_shift('$') && termkeys_needs_shift('~') && termkeys_needs_shift('"'));
	T_CHECK(!termkeys_needs_shift('a') && !termkeys_needs_shift('/') && !termkeys_needs_shift(0xff0d) &&
		!termkeys_needs_shift(0) && !termkeys_needs_shift('1') && !termkeys_needs_shift(0x100 + '>'));
	return T_DONE();
}
