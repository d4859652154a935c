// libnats, the official NATS C client (Debian's libnats-dev), for the
// mediatord NATS bridge (issue 14). Only Daemon/NATS uses it: the broker
// core knows nothing of NATS.
#include <nats/nats.h>

// natsConnStatus's values under one spelling: the header names them with or
// without the NATS_CONN_STATUS_ prefix depending on a macro.
static inline int mediator_nats_status_connected(void) { return (int)NATS_CONN_STATUS_CONNECTED; }
static inline int mediator_nats_status_closed(void) { return (int)NATS_CONN_STATUS_CLOSED; }
static inline int mediator_nats_status_reconnecting(void) { return (int)NATS_CONN_STATUS_RECONNECTING; }
