/* rdma_destroy_id with a CM event the program took and never acknowledged:
 * librdmacm waits in rdma_destroy_id until every event the kernel reported
 * for the id is acknowledged, forever (rdma_destroy_id(3): "Users must free
 * any associated QP with the rdma_cm_id before calling this routine and ack
 * all related events"). The shape of perftest PR 60 and SPDK #3347.
 *   destroy_unacked          the bug: the ADDR_RESOLVED event is not acked
 *   destroy_unacked --ack    fixed: rdma_ack_cm_event first */
#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  const int ack = argc > 1 && strcmp(argv[1], "--ack") == 0;
  struct rdma_event_channel* channel = rdma_create_event_channel();
  struct rdma_cm_id* id = NULL;
  if (channel == NULL || rdma_create_id(channel, &id, NULL, RDMA_PS_TCP) != 0) {
    perror("destroy_unacked: rdma_create_id");
    return 1;
  }
  struct sockaddr_in to;
  memset(&to, 0, sizeof to);
  to.sin_family = AF_INET;
  to.sin_port = htons(7700);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct rdma_cm_event* event = NULL;
  if (rdma_resolve_addr(id, NULL, (struct sockaddr*)&to, 2000) != 0 ||
      rdma_get_cm_event(channel, &event) != 0) {
    perror("destroy_unacked: rdma_resolve_addr");
    return 1;
  }
  printf("destroy_unacked: %s\n", rdma_event_str(event->event));
  fflush(stdout);
  if (ack) rdma_ack_cm_event(event);
  rdma_destroy_id(id);
  rdma_destroy_event_channel(channel);
  printf("destroy_unacked: destroyed\n");
  return 0;
}
