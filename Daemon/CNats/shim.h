// libnats, the official NATS C client (Debian's libnats-dev), for the
// mediatord NATS bridge (issue 14). Only Daemon/NATS uses it: the broker
// core knows nothing of NATS.
//
// libnats is loaded with dlopen when NATS is first used, not linked: a
// mediatord without NATS settings then never maps it, nor the OpenSSL and
// protobuf-c libraries it pulls in (1.9 MiB of RSS), and a system without
// libnats runs everything but the bridge. The headers give the types;
// `mediator_nats_load` looks up each function this package calls, into a
// table whose fields have the functions' own types.
#include <dlfcn.h>
#include <stddef.h>
#include <nats/nats.h>

// natsConnStatus's values under one spelling: the header names them with or
// without the NATS_CONN_STATUS_ prefix depending on a macro.
static inline int mediator_nats_status_connected(void) { return (int)NATS_CONN_STATUS_CONNECTED; }
static inline int mediator_nats_status_closed(void) { return (int)NATS_CONN_STATUS_CLOSED; }
static inline int mediator_nats_status_reconnecting(void) { return (int)NATS_CONN_STATUS_RECONNECTING; }

// Every libnats function Daemon/NATS calls.
#define MEDIATOR_NATS_FUNCTIONS(X) \
    X(nats_GetLastError) X(natsStatus_GetText) \
    X(natsOptions_Create) X(natsOptions_Destroy) X(natsOptions_SetServers) X(natsOptions_SetName) \
    X(natsOptions_SetTimeout) X(natsOptions_SetNoEcho) X(natsOptions_SetNoRandomize) X(natsOptions_SetSendAsap) \
    X(natsOptions_SetUserInfo) X(natsOptions_SetToken) X(natsOptions_SetUserCredentialsFromFiles) \
    X(natsOptions_SetNKeyFromSeed) X(natsOptions_SetSecure) X(natsOptions_LoadCATrustedCertificates) \
    X(natsOptions_LoadCertificatesChain) X(natsOptions_SkipServerVerification) X(natsOptions_SetAllowReconnect) \
    X(natsOptions_SetMaxReconnect) X(natsOptions_SetReconnectWait) X(natsOptions_SetReconnectBufSize) \
    X(natsOptions_SetDisconnectedCB) X(natsOptions_SetReconnectedCB) X(natsOptions_SetClosedCB) \
    X(natsOptions_SetErrorHandler) X(natsOptions_SetRetryOnFailedConnect) \
    X(natsConnection_Connect) X(natsConnection_Close) X(natsConnection_Destroy) X(natsConnection_Status) \
    X(natsConnection_IsClosed) X(natsConnection_GetConnectedUrl) X(natsConnection_GetLastError) \
    X(natsConnection_PublishMsg) X(natsConnection_FlushTimeout) X(natsConnection_Subscribe) \
    X(natsConnection_QueueSubscribe) \
    X(natsSubscription_SetOnCompleteCB) X(natsSubscription_Unsubscribe) X(natsSubscription_Destroy) \
    X(natsSubscription_IsValid) X(natsSubscription_GetSubject) \
    X(natsMsg_Create) X(natsMsg_Destroy) X(natsMsg_GetSubject) X(natsMsg_GetReply) X(natsMsg_GetData) \
    X(natsMsg_GetDataLength) X(natsMsg_IsNoResponders) X(natsMsgHeader_Add) X(natsMsgHeader_Keys) \
    X(natsMsgHeader_Values) \
    X(natsInbox_Create) X(natsInbox_Destroy) X(natsSubscription_SetPendingLimits) \
    X(natsConnection_GetMaxPayload)

// One field per function, of that function's type (never null once loaded).
typedef struct mediator_nats {
#define MEDIATOR_NATS_FIELD(name) __typeof__(&name) _Nonnull name;
    MEDIATOR_NATS_FUNCTIONS(MEDIATOR_NATS_FIELD)
#undef MEDIATOR_NATS_FIELD
} mediator_nats;

#define MEDIATOR_NATS_TEXT(x) #x
#define MEDIATOR_NATS_NUMBER(x) MEDIATOR_NATS_TEXT(x)
// The soname of the libnats these headers are from: libnats.so.3.4.
#define MEDIATOR_NATS_SONAME "libnats.so." MEDIATOR_NATS_NUMBER(NATS_VERSION_MAJOR) "." MEDIATOR_NATS_NUMBER(NATS_VERSION_MINOR)

// Loads libnats and looks up every function. The table, or NULL with
// `*problem` saying why (dlerror's text, or the function missing). Not
// thread-safe: the Swift side calls it once, from a lazy global.
static inline const mediator_nats *_Nullable mediator_nats_load(const char *_Nullable *_Nonnull problem) {
    static mediator_nats table;
    void *library = dlopen(MEDIATOR_NATS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        *problem = dlerror();
        return NULL;
    }
#define MEDIATOR_NATS_LOOKUP(name) \
    table.name = (__typeof__(&name))dlsym(library, #name); \
    if (table.name == NULL) { *problem = "libnats lacks " #name; return NULL; }
    MEDIATOR_NATS_FUNCTIONS(MEDIATOR_NATS_LOOKUP)
#undef MEDIATOR_NATS_LOOKUP
    return &table;
}

static inline const char *_Nonnull mediator_nats_soname(void) { return MEDIATOR_NATS_SONAME; }
