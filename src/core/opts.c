/* Storage of the global options. */
#include "core/opts.h"

static struct kvcon_opts global;

struct kvcon_opts *opts_global(void)
{
	return &global;
}
