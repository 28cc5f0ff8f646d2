/* devtrace trigger: the processes that listen for requests (src/cli/trigger.c). */
#ifndef DT_CLI_TRIGGER_H
#define DT_CLI_TRIGGER_H

int dt__cli_trigger(int argc, char **argv);

#endif
