// Exported event calls: completion events and asynchronous events.
#include "exports.h"
#include "thread_calls.h"

using namespace verbfault;
namespace thread_calls = verbfault::interposer::thread_calls;

extern "C" {

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  thread_calls::verbs_point();
  return interposer::get_cq_event(channel, cq, cq_context);
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  thread_calls::verbs_point();
  interposer::ack_cq_events(cq, nevents);
}

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  thread_calls::verbs_point();
  return interposer::get_async_event(context, event);
}

void ibv_ack_async_event(ibv_async_event* event) {
  thread_calls::verbs_point();
  interposer::ack_async_event(event);
}

}  // extern "C"
