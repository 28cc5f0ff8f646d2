#ifndef DT_CLI_ANALYSIS_H
#define DT_CLI_ANALYSIS_H

/* argv[0] is "convert", "analyze" or "diff"; returns only on failure. */
int dt__cli_analysis(int argc, char **argv);

#endif
