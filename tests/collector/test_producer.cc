// A traced process for the collector's live tests; uses only ticktrace/trace.h.
int main() { return 0; }
