// SPDX-License-Identifier: MIT
// cxx: C++ names for the demangler.  Burns 0.3 s of CPU split between a
// method (ns::Worker::run()), a member of a class template
// (ns::Counter<long>::tick()) and a function template
// (unsigned int ns::churn<unsigned int>(unsigned int)).
#include "spin.h"

namespace ns {

template <typename T> struct Counter {
	T value;
	__attribute__((noinline)) void tick()
	{
		NW_SPIN(0.1);
		value++;
	}
};

template <typename T> __attribute__((noinline)) T churn(T seed)
{
	NW_SPIN(0.1);
	return seed * 3;
}

class Worker {
      public:
	__attribute__((noinline)) unsigned run()
	{
		Counter<long> c = {0};

		NW_SPIN(0.1);
		c.tick();
		return churn<unsigned>(7u) + (unsigned)c.value;
	}
};

} // namespace ns

int main()
{
	ns::Worker w;

	return w.run() == 22 ? 0 : 1;
}
