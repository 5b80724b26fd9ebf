// Opens the simulated device through the installed libverbfault.so.
#include <verbfault/verbfault.h>

#include <infiniband/verbs.h>

#include <cstdio>
#include <cstring>

int main() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  for (int i = 0; list && i < n; ++i) {
    if (std::strcmp(ibv_get_device_name(list[i]), "vfsim0") != 0) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    ibv_port_attr port{};
    int rc = ctx ? ibv_query_port(ctx, 1, &port) : -1;
    std::printf("verbfault %s: vfsim0 port 1 %s\n", verbfault::kVersion,
                rc == 0 ? ibv_port_state_str(port.state) : "unavailable");
    if (ctx) ibv_close_device(ctx);
    ibv_free_device_list(list);
    return rc == 0 && port.state == IBV_PORT_ACTIVE ? 0 : 1;
  }
  std::printf("vfsim0 not listed\n");
  return 1;
}
