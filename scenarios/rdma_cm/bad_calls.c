/* librdmacm calls with bad arguments, each with the errno it must fail
 * with (librdmacm's man pages: -1 and errno set), never a crash:
 *   a NULL id, channel or event                        EINVAL
 *   an event channel whose descriptor is no CM file    EBADF (closed fd)
 *   a destination address of no address family        EINVAL
 *   an address text nothing parses (rdma_getaddrinfo)  nonzero
 *   rdma_accept on an id that is no listener's child   EINVAL
 *   rdma_connect before the route is resolved          EINVAL
 *   rdma_join_multicast on an id with no device        EINVAL
 *   rdma_leave_multicast of a group never joined       EADDRNOTAVAIL
 * One line per call ("NAME: errno E"); exit 0 when every call failed as it
 * must, 1 when one did not. */
#include <rdma/rdma_cma.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static int failures = 0;

/* The call returned -1 with errno `wanted`. */
static void expect(const char* name, int result, int wanted) {
  const int error = errno;
  printf("%s: %s\n", name, result == -1 ? strerror(error) : "succeeded");
  if (result != -1 || error != wanted) {
    printf("bad_calls: %s: expected -1 with %s\n", name, strerror(wanted));
    failures = 1;
  }
}

int main(void) {
  struct rdma_cm_event* event = NULL;
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(7790);

  expect("rdma_get_cm_event(NULL channel)", rdma_get_cm_event(NULL, &event), EINVAL);
  expect("rdma_ack_cm_event(NULL)", rdma_ack_cm_event(NULL), EINVAL);
  expect("rdma_destroy_id(NULL)", rdma_destroy_id(NULL), EINVAL);
  expect("rdma_bind_addr(NULL id)", rdma_bind_addr(NULL, (struct sockaddr*)&address), EINVAL);
  expect("rdma_resolve_addr(NULL id)",
         rdma_resolve_addr(NULL, NULL, (struct sockaddr*)&address, 1000), EINVAL);
  expect("rdma_connect(NULL id)", rdma_connect(NULL, NULL), EINVAL);
  expect("rdma_accept(NULL id)", rdma_accept(NULL, NULL), EINVAL);
  expect("rdma_create_qp(NULL id)", rdma_create_qp(NULL, NULL, NULL), EINVAL);

  struct rdma_event_channel unknown = {.fd = 1000};
  expect("rdma_get_cm_event(unknown channel)", rdma_get_cm_event(&unknown, &event), EBADF);

  struct rdma_event_channel* channel = rdma_create_event_channel();
  struct rdma_cm_id* id = NULL;
  if (channel == NULL || rdma_create_id(channel, &id, NULL, RDMA_PS_TCP) != 0) {
    perror("bad_calls: rdma_create_id");
    return 1;
  }
  struct sockaddr no_family;
  memset(&no_family, 0, sizeof no_family);
  no_family.sa_family = AF_UNIX;
  expect("rdma_resolve_addr(AF_UNIX destination)", rdma_resolve_addr(id, NULL, &no_family, 1000),
         EINVAL);
  struct rdma_addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_port_space = RDMA_PS_TCP;
  struct rdma_addrinfo* info = NULL;
  const int parsed = rdma_getaddrinfo("999.1.2.3.4", "7790", &hints, &info);
  printf("rdma_getaddrinfo(\"999.1.2.3.4\"): %s\n", parsed != 0 ? "failed" : "succeeded");
  if (parsed == 0) {
    failures = 1;
    rdma_freeaddrinfo(info);
  }
  struct rdma_conn_param parameters;
  memset(&parameters, 0, sizeof parameters);
  expect("rdma_accept(not a listener's child)", rdma_accept(id, &parameters), EINVAL);
  expect("rdma_connect(no route)", rdma_connect(id, &parameters), EINVAL);
  struct sockaddr_in group;
  memset(&group, 0, sizeof group);
  group.sin_family = AF_INET;
  group.sin_addr.s_addr = htonl(0xef010101); /* 239.1.1.1 */
  expect("rdma_join_multicast(no device)", rdma_join_multicast(id, (struct sockaddr*)&group, NULL),
         EINVAL);
  expect("rdma_leave_multicast(never joined)", rdma_leave_multicast(id, (struct sockaddr*)&group),
         EADDRNOTAVAIL);
  if (rdma_destroy_id(id) != 0) {
    perror("bad_calls: rdma_destroy_id");
    failures = 1;
  }
  rdma_destroy_event_channel(channel);
  printf("bad_calls: %s\n", failures ? "FAILED" : "every call failed as it must");
  return failures;
}
