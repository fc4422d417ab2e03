/* Whether kvcon may believe a file or directory another local user could have written.
 *
 * kvcon runs as root beside other users: its config file decides which programs libvirt runs (engine.host URIs),
 * and its state, cache and runtime directories hold records, tokens, keys and kubeconfigs it acts on. Such a path is
 * trusted when it, and every directory above it up to /, is owned by root or the effective uid and cannot be
 * written by group or others. A root-owned sticky directory (/tmp) is accepted above a private directory (a
 * `mktemp -d` one): other users cannot rename or remove an entry they do not own there. It is never accepted as the
 * directory that holds the checked path itself (anyone can create a name in it first). A symbolic link is followed:
 * the directories that hold the link and everything its target resolves to are checked.
 *
 * Messages name the path (escaped for the terminal, util_escape_display) and what is wrong: "owned by uid 1001, not
 * root or uid 0", "mode 0620 lets group or others write it". */
#ifndef KVCON_CORE_TRUST_H
#define KVCON_CORE_TRUST_H

#include <stddef.h>

enum trust_result {
	TRUST_REFUSED = -1, /* *why says why */
	TRUST_OK = 0,
	TRUST_MISSING = 1, /* the path does not exist; the directories that do above it are trusted */
};

/* Checks path (a file or a directory). *why (caller frees) is set only for TRUST_REFUSED. */
enum trust_result trust_check(const char *path, char **why);

/* Reads a whole file trust_check accepts (NUL-terminated, length in *len if not NULL); caller frees. The file is
 * opened after the check without following a link and must be the one checked (device and inode), a regular file.
 * NULL with *why set when refused, NULL with *why NULL and errno set (ENOENT: missing) when it cannot be read. */
char *trust_read_file(const char *path, size_t *len, char **why);

/* For a directory of many files read in one go (an engine host's VM records: 100,000 of them): the directory is
 * checked as trust_check checks it, once, and opened (it must be the one checked); its files are then read relative
 * to it with trust_read_at, each one's own owner, mode and type judged, without the walk up to / each time. A
 * descriptor (caller closes), or -1 with *why (caller frees; NULL: errno says why, ENOENT when missing). */
int trust_dir_open(const char *path, char **why);
/* trust_read_file for NAME (one component, no '/') of the directory dirfd that trust_dir_open opened at dir (named
 * in messages). */
char *trust_read_at(int dirfd, const char *dir, const char *name, size_t *len, char **why);

#endif
