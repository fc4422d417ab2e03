/* panemain: the full-screen `kvcon console` and `kvcon vnc`: the dashboard's screen (screen.c: the one
 * terminal owner, restore path and frame pacer) showing one pane zoomed to the whole terminal, as tmux shows a
 * zoomed pane. No header, no list, no status line: the pane draws every cell. */
#ifndef KVCON_UI_PANEMAIN_H
#define KVCON_UI_PANEMAIN_H

struct view;

/* Takes the terminal (screen_init), opens v as the only pane, zoomed and focused, and runs the loop until the
 * pane gives focus back or closes (Ctrl+] in a console or VNC pane), SIGTERM/SIGHUP/SIGINT, or a loop_quit(rc) from
 * elsewhere; gives the terminal back before it returns. Returns loop_run's status (0 for the pane's own exit),
 * or -1 with a message on stderr when the terminal cannot be taken (v is then freed). v stays alive until
 * panemain_close() (the caller may read its state after the loop), unless the pane closed itself. */
int panemain_run(struct view *v);
/* Frees the pane (every view). */
void panemain_close(void);
/* Frames drawn by the last panemain_run. */
unsigned long panemain_frames(void);

#endif
