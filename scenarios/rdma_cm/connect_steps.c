/* One connection through the connection manager, in one process: a
 * listener on an address (argv[2], default 127.0.0.1; its port argv[1])
 * and an active id that resolves, connects (private
 * data "hello"), is accepted, and disconnects. Every event is printed as it
 * comes, with its status and the REJECTED event's private data, so that a
 * test sees what a CM fault of the plan made of each step:
 *   event <id> <EVENT> status <n> [private '<text>']
 * A step that fails ends the program with the line
 *   connect_steps: <what> failed (<EVENT or errno>)
 * and exit 2; the whole way done: "connect_steps: connected and
 * disconnected", exit 0. An event that never comes is waited for in
 * rdma_get_cm_event, as an application would (the harness judges the
 * wait). */
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct rdma_event_channel* channel;
static struct rdma_cm_id* listener;
static struct rdma_cm_id* active;
static struct rdma_cm_id* passive;
/* --ack-twice: the first event is acknowledged twice (the bug). */
static int ack_twice;

static const char* name_of(struct rdma_cm_id* id) {
  return id == listener ? "listener" : id == active ? "active" : "passive";
}

/* The next event, printed and acknowledged; its type and status. An
 * ADDR_CHANGE (the netdev's hardware address changed: a bond's failover)
 * leaves the connection as it is: printed, acknowledged and passed over. */
static enum rdma_cm_event_type next_event(int* status) {
  struct rdma_cm_event* event = NULL;
next:
  if (rdma_get_cm_event(channel, &event) != 0) {
    printf("connect_steps: rdma_get_cm_event failed (%s)\n", strerror(errno));
    exit(2);
  }
  if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) passive = event->id;
  printf("event %s %s status %d", name_of(event->id), rdma_event_str(event->event), event->status);
  if (event->event == RDMA_CM_EVENT_REJECTED && event->param.conn.private_data_len > 0) {
    char text[64] = {0};
    memcpy(text, event->param.conn.private_data,
           event->param.conn.private_data_len < 63 ? event->param.conn.private_data_len : 63);
    printf(" private '%s'", text);
  }
  printf("\n");
  fflush(stdout);
  const enum rdma_cm_event_type type = event->event;
  *status = event->status;
  rdma_ack_cm_event(event);
  if (ack_twice) {
    /* librdmacm freed the event at the first ack: this is a double free. */
    ack_twice = 0;
    const int again = rdma_ack_cm_event(event);
    printf("connect_steps: the second rdma_ack_cm_event returned %d (%s)\n", again,
           again == 0 ? "no error" : strerror(errno));
    fflush(stdout);
  }
  if (type == RDMA_CM_EVENT_ADDR_CHANGE) goto next;
  return type;
}

static void expect(enum rdma_cm_event_type wanted, const char* step) {
  int status = 0;
  const enum rdma_cm_event_type got = next_event(&status);
  if (got != wanted) {
    printf("connect_steps: %s failed (%s)\n", step, rdma_event_str(got));
    exit(2);
  }
}

static void check(int result, const char* step) {
  if (result != 0) {
    printf("connect_steps: %s failed (%s)\n", step, strerror(errno));
    exit(2);
  }
}

static void make_qp(struct rdma_cm_id* id) {
  struct ibv_qp_init_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  check(rdma_create_qp(id, NULL, &attr), "rdma_create_qp");
}

/* The completion of the one WR on `id`'s send or receive CQ, printed. */
static enum ibv_wc_status complete(struct rdma_cm_id* id, int receive, const char* what) {
  struct ibv_wc wc;
  int n;
  struct ibv_cq* cq = receive ? id->recv_cq : id->send_cq;
  while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
  }
  if (n < 0) {
    printf("connect_steps: ibv_poll_cq failed\n");
    exit(2);
  }
  printf("%s completion %s\n", what, ibv_wc_status_str(wc.status));
  fflush(stdout);
  return wc.status;
}

/* One SEND from the active side to a receive the passive side posted. A
 * failed send ends the program with the next event of the channel (what
 * the connection manager says of the connection). */
static void exchange(void) {
  static char out[64] = "connect_steps", in[64];
  struct ibv_mr* out_mr = rdma_reg_msgs(active, out, sizeof out);
  struct ibv_mr* in_mr = rdma_reg_msgs(passive, in, sizeof in);
  if (out_mr == NULL || in_mr == NULL) {
    printf("connect_steps: rdma_reg_msgs failed (%s)\n", strerror(errno));
    exit(2);
  }
  check(rdma_post_recv(passive, NULL, in, sizeof in, in_mr), "rdma_post_recv");
  check(rdma_post_send(active, NULL, out, sizeof out, out_mr, IBV_SEND_SIGNALED), "rdma_post_send");
  if (complete(active, 0, "send") != IBV_WC_SUCCESS) {
    int status = 0;
    next_event(&status);
    printf("connect_steps: the send failed\n");
    exit(2);
  }
  complete(passive, 1, "recv");
  rdma_dereg_mr(out_mr);
  rdma_dereg_mr(in_mr);
}

int main(int argc, char** argv) {
  const int port = argc > 1 ? atoi(argv[1]) : 7471;
  const char* host = argc > 2 ? argv[2] : "127.0.0.1";
  /* --timewait: wait for both ids' TIMEWAIT_EXIT before destroying them,
   * as an application that reuses its QPs must (rdma_cm(7)). */
  const int timewait = argc > 3 && strcmp(argv[3], "--timewait") == 0;
  /* --send: once connected, the active side sends one message to the
   * passive side's posted receive, and each side polls its completion:
   *   send completion <status>, recv completion <status> */
  const int send = argc > 3 && strcmp(argv[3], "--send") == 0;
  /* --migrate: once connected, both connection ids move to a channel of
   * their own (rdma_migrate_id), where their disconnection is heard. */
  const int migrate = argc > 3 && strcmp(argv[3], "--migrate") == 0;
  /* Bugs the harness's CM checks find:
   *   --destroy-id-first       rdma_destroy_id before rdma_destroy_qp
   *   --post-after-disconnect  a receive posted after DISCONNECTED was read
   *   --private-data=N         rdma_connect with N bytes of private data
   *   --ack-twice              the first event acknowledged twice */
  const int destroy_id_first = argc > 3 && strcmp(argv[3], "--destroy-id-first") == 0;
  const int post_after_disconnect = argc > 3 && strcmp(argv[3], "--post-after-disconnect") == 0;
  ack_twice = argc > 3 && strcmp(argv[3], "--ack-twice") == 0;
  const int private_data =
      argc > 3 && strncmp(argv[3], "--private-data=", 15) == 0 ? atoi(argv[3] + 15) : 6;
  channel = rdma_create_event_channel();
  if (channel == NULL) {
    printf("connect_steps: rdma_create_event_channel failed (%s)\n", strerror(errno));
    return 2;
  }
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
    printf("connect_steps: '%s' is not an IPv4 address\n", host);
    return 2;
  }
  check(rdma_create_id(channel, &listener, NULL, RDMA_PS_TCP), "rdma_create_id");
  check(rdma_bind_addr(listener, (struct sockaddr*)&address), "rdma_bind_addr");
  check(rdma_listen(listener, 4), "rdma_listen");

  check(rdma_create_id(channel, &active, NULL, RDMA_PS_TCP), "rdma_create_id");
  check(rdma_resolve_addr(active, NULL, (struct sockaddr*)&address, 2000), "rdma_resolve_addr");
  expect(RDMA_CM_EVENT_ADDR_RESOLVED, "address resolution");
  check(rdma_resolve_route(active, 2000), "rdma_resolve_route");
  expect(RDMA_CM_EVENT_ROUTE_RESOLVED, "route resolution");
  make_qp(active);
  struct rdma_conn_param conn;
  memset(&conn, 0, sizeof conn);
  static char hello[255] = "hello";
  conn.private_data = hello;
  conn.private_data_len = (uint8_t)(private_data < 255 ? private_data : 255);
  conn.retry_count = 7;
  check(rdma_connect(active, &conn), "rdma_connect");
  expect(RDMA_CM_EVENT_CONNECT_REQUEST, "the connection request");
  make_qp(passive);
  memset(&conn, 0, sizeof conn);
  check(rdma_accept(passive, &conn), "rdma_accept");
  /* ESTABLISHED on both sides, in the order the CM reports them. */
  expect(RDMA_CM_EVENT_ESTABLISHED, "connection");
  expect(RDMA_CM_EVENT_ESTABLISHED, "connection");
  /* The passive side answers the DREQ with its own rdma_disconnect once it
   * heard of it (the DREP): then the active side's DISCONNECTED comes. */
  if (send) exchange();
  struct rdma_event_channel* first = channel;
  if (migrate) {
    channel = rdma_create_event_channel();
    if (channel == NULL) {
      printf("connect_steps: rdma_create_event_channel failed (%s)\n", strerror(errno));
      return 2;
    }
    check(rdma_migrate_id(active, channel), "rdma_migrate_id");
    check(rdma_migrate_id(passive, channel), "rdma_migrate_id");
  }
  check(rdma_disconnect(active), "rdma_disconnect");
  expect(RDMA_CM_EVENT_DISCONNECTED, "disconnection");
  check(rdma_disconnect(passive), "rdma_disconnect");
  expect(RDMA_CM_EVENT_DISCONNECTED, "disconnection");
  if (timewait) {
    expect(RDMA_CM_EVENT_TIMEWAIT_EXIT, "timewait");
    expect(RDMA_CM_EVENT_TIMEWAIT_EXIT, "timewait");
  }
  if (post_after_disconnect) {
    static char late[16];
    struct ibv_mr* mr = rdma_reg_msgs(passive, late, sizeof late);
    printf("connect_steps: a receive posted after DISCONNECTED: %s\n",
           mr != NULL && rdma_post_recv(passive, NULL, late, sizeof late, mr) == 0 ? "posted"
                                                                                   : "failed");
    fflush(stdout);
    if (mr != NULL) rdma_dereg_mr(mr);
  }
  if (destroy_id_first) {
    struct ibv_qp* active_qp = active->qp;
    struct ibv_qp* passive_qp = passive->qp;
    rdma_destroy_id(active);
    rdma_destroy_id(passive);
    ibv_destroy_qp(active_qp);
    ibv_destroy_qp(passive_qp);
  } else {
    rdma_destroy_qp(active);
    rdma_destroy_qp(passive);
    rdma_destroy_id(active);
    rdma_destroy_id(passive);
  }
  rdma_destroy_id(listener);
  rdma_destroy_event_channel(channel);
  if (first != channel) rdma_destroy_event_channel(first);
  printf("connect_steps: connected and disconnected%s\n", migrate ? " on a channel of their own" : "");
  return 0;
}
