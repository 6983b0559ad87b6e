// SPDX-License-Identifier: MIT
// #pragma narwhal from C++ (tests/integration/sections-plugin.sh): a member
// function defined in its class, a function left by exceptions, a template.
// Expected counts: box_area 4, thrower 4 (2 of them left by an exception),
// twice 2.
#include <cstdio>
#include <stdexcept>

namespace geo {
struct Box {
	int w;
#pragma narwhal box_area
	int area() const
	{
		return w * w;
	}
};
} // namespace geo

#pragma narwhal
static int thrower(int i)
{
	if (i % 2)
		throw std::runtime_error("odd");
	return i;
}

#pragma narwhal twice
template <typename T> T twice(T v)
{
	return v + v;
}

int main()
{
	geo::Box b{ 3 };
	int s = 0;

	for (int i = 0; i < 4; i++) {
		s += b.area();
		try {
			s += thrower(i);
		} catch (const std::exception &) {
			s++;
		}
	}
	s += twice(2) + (int)twice(2.5);
	std::printf("%d\n", s);
	return 0;
}
