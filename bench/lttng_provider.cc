// Instantiates the LTTng-UST probes of lttng_provider.h (once per program).
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_provider.h"
