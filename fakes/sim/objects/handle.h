// The memory an application's ibv_* pointer points to.
#pragma once

namespace verbfault::sim {

// Every object handed to the application is a libibverbs struct (ibv_cq,
// ibv_qp, ...) followed by a pointer to the model object that owns it. The
// application only sees the first member; the provider gets from the
// pointer back to its model object without a lookup.
template <class Verbs, class Owner>
struct Handle {
  Verbs verbs{};
  Owner* owner = nullptr;
};

template <class Owner, class Verbs, class Pointer>
Owner* owner_of(Pointer* verbs) {
  return reinterpret_cast<const Handle<Verbs, Owner>*>(verbs)->owner;
}

}  // namespace verbfault::sim
