// The provider double: a stand-in for the real libibverbs.so.1 (see
// CMakeLists.txt). Its devices are served by its own private copy of the
// simulated provider; what it adds is what libibverbs itself does around a
// provider: the device list, the device names, and the event calls that
// read the channel's and the context's file descriptors.
#pragma once

#include <infiniband/verbs.h>

#include <span>

// The exports are the real libibverbs signatures, not the macros verbs.h
// puts in front of some of them.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

extern "C" {
// Exported by libibverbs but declared only in its private driver.h.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index,
                       int* type);
}

namespace verbfault::provider_double {

// The double's devices: the private simulator's devices under the names
// vfreal0, vfreal1, ... (renamed once, before the first is handed out).
std::span<ibv_device* const> devices();

// File descriptors, as libibverbs uses them: ibv_get_cq_event(3) reads the
// event from channel->fd and ibv_get_async_event(3) from context->async_fd,
// whatever else the structs hold.
void context_opened(ibv_context* context);
void context_closed(ibv_context* context);
void channel_created(ibv_comp_channel* channel);
void channel_destroyed(ibv_comp_channel* channel);
// The channel whose provider fd is `fd`, or nullptr.
ibv_comp_channel* channel_with_fd(int fd);
// Whether `context->async_fd` is the fd the provider gave the context.
bool async_fd_is_providers(const ibv_context* context);
// Whether `channel->fd` is the fd the provider gave the channel (true for
// no channel). libibverbs passes channel->fd to the kernel when it creates
// a CQ, and context->async_fd when it creates a CQ, QP, SRQ or WQ; the
// kernel knows them by those fds only: any other fd is EBADF there, and
// so it is here.
bool channel_fd_is_providers(const ibv_comp_channel* channel);

}  // namespace verbfault::provider_double
