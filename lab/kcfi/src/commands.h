/* The subcommands: each takes argv with argv[0] = the command name. */
#ifndef KCFI_COMMANDS_H
#define KCFI_COMMANDS_H

int cmd_hash(int argc, char **argv);
int cmd_scan(int argc, char **argv);
int cmd_site(int argc, char **argv);
int cmd_func(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_explain(int argc, char **argv);

#endif
