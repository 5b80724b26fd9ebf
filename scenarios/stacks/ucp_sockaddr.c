/* A UCP client and server that connect by socket address, as UCX's own
 * client-server applications do (ucp_listener_create, ucp_ep_create with
 * UCP_EP_PARAM_FIELD_SOCK_ADDR): UCX's connection manager (rdmacm first,
 * UCX_SOCKADDR_TLS_PRIORITY) sets the connection up. Then the client sends
 * ITERATIONS tagged messages of each size, the server echoes each, and the
 * client checks every byte that came back.
 *
 *   ucp_sockaddr PORT                  the server (listens on every address)
 *   ucp_sockaddr PORT SERVER-ADDRESS   the client
 *
 * Prints "ucp_sockaddr: client: N messages of S bytes echoed intact" per
 * size and "ucp_sockaddr: <role>: done" at the end; exit 0 on success. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

enum { kIterations = 20 };
static const size_t kSizes[] = {8, 4096, 1 << 20};
static const ucp_tag_t kTag = 0x5ca1ab1e;

static ucp_context_h context;
static ucp_worker_h worker;
static ucp_ep_h endpoint;
static ucp_listener_h listener;

static void die(const char* what, ucs_status_t status) {
  fprintf(stderr, "ucp_sockaddr: %s: %s\n", what, ucs_status_string(status));
  exit(1);
}

/* Progresses the worker until the request `request` (or an immediate
 * status) is complete; its status. */
static ucs_status_t wait_for(void* request) {
  if (request == NULL) return UCS_OK;
  if (UCS_PTR_IS_ERR(request)) return UCS_PTR_STATUS(request);
  ucs_status_t status;
  while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) ucp_worker_progress(worker);
  ucp_request_free(request);
  return status;
}

static void on_connection(ucp_conn_request_h request, void* arg) {
  (void)arg;
  if (endpoint != NULL) {
    ucp_listener_reject(listener, request);
    return;
  }
  ucp_ep_params_t params = {.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST,
                            .conn_request = request};
  ucs_status_t status = ucp_ep_create(worker, &params, &endpoint);
  if (status != UCS_OK) die("ucp_ep_create (server)", status);
}

static void transfer(void* buffer, size_t size, int sending) {
  ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
                               .datatype = ucp_dt_make_contig(1)};
  void* request = sending ? ucp_tag_send_nbx(endpoint, buffer, size, kTag, &param)
                          : ucp_tag_recv_nbx(worker, buffer, size, kTag, ~(ucp_tag_t)0, &param);
  ucs_status_t status = wait_for(request);
  if (status != UCS_OK) die(sending ? "send" : "receive", status);
}

/* A flushing close on both sides. Every message was answered and every
 * send completed (acknowledged by the peer) before it, so nothing of the
 * exchange is in flight; the two closes race, though: the side that closes
 * second may find the other closed or ended already, and its flush then
 * ends in "Endpoint timeout" or "Connection reset", as on any fabric. That
 * is said, not a failure. */
static void close_endpoint(void) {
  ucp_request_param_t param = {.op_attr_mask = 0};
  ucs_status_t status = wait_for(ucp_ep_close_nbx(endpoint, &param));
  if (status == UCS_ERR_ENDPOINT_TIMEOUT || status == UCS_ERR_CONNECTION_RESET) {
    printf("ucp_sockaddr: the peer closed first (%s)\n", ucs_status_string(status));
    return;
  }
  if (status != UCS_OK) die("ucp_ep_close_nbx", status);
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: ucp_sockaddr PORT [SERVER-ADDRESS]\n");
    return 2;
  }
  const int client = argc == 3;
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
  if (client && inet_pton(AF_INET, argv[2], &address.sin_addr) != 1) {
    fprintf(stderr, "ucp_sockaddr: '%s' is not an IPv4 address\n", argv[2]);
    return 2;
  }
  ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG};
  ucs_status_t status = ucp_init(&params, NULL, &context);
  if (status != UCS_OK) die("ucp_init", status);
  ucp_worker_params_t worker_params = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                                       .thread_mode = UCS_THREAD_MODE_SINGLE};
  status = ucp_worker_create(context, &worker_params, &worker);
  if (status != UCS_OK) die("ucp_worker_create", status);

  if (client) {
    ucp_ep_params_t ep = {.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR,
                          .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
                          .sockaddr = {.addr = (struct sockaddr*)&address,
                                       .addrlen = sizeof address}};
    status = ucp_ep_create(worker, &ep, &endpoint);
    if (status != UCS_OK) die("ucp_ep_create (client)", status);
  } else {
    ucp_listener_params_t lp = {
        .field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
        .sockaddr = {.addr = (struct sockaddr*)&address, .addrlen = sizeof address},
        .conn_handler = {.cb = on_connection}};
    status = ucp_listener_create(worker, &lp, &listener);
    if (status != UCS_OK) die("ucp_listener_create", status);
    printf("ucp_sockaddr: server: listening on port %s\n", argv[1]);
    fflush(stdout);
    while (endpoint == NULL) ucp_worker_progress(worker);
  }

  for (size_t s = 0; s < sizeof kSizes / sizeof kSizes[0]; ++s) {
    const size_t size = kSizes[s];
    unsigned char* buffer = malloc(size);
    for (int i = 0; i < kIterations; ++i) {
      if (client) {
        for (size_t b = 0; b < size; ++b) buffer[b] = (unsigned char)(b * 7 + (size_t)i);
        transfer(buffer, size, 1);
        memset(buffer, 0, size);
        transfer(buffer, size, 0);
        for (size_t b = 0; b < size; ++b)
          if (buffer[b] != (unsigned char)(b * 7 + (size_t)i)) {
            fprintf(stderr, "ucp_sockaddr: client: byte %zu of message %d (%zu bytes) is wrong\n", b,
                    i, size);
            return 1;
          }
      } else {
        transfer(buffer, size, 0);
        transfer(buffer, size, 1);
      }
    }
    if (client) printf("ucp_sockaddr: client: %d messages of %zu bytes echoed intact\n", kIterations, size);
    free(buffer);
  }
  close_endpoint();
  if (listener != NULL) ucp_listener_destroy(listener);
  ucp_worker_destroy(worker);
  ucp_cleanup(context);
  printf("ucp_sockaddr: %s: done\n", client ? "client" : "server");
  return 0;
}
