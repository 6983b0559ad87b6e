// SPDX-License-Identifier: MIT
// std::mutex contention (narwhal-record --locks): two threads through
// guarded_section() on the global counter_mutex, each holding it 200 us.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

std::mutex counter_mutex;
static long counter;

static void busy(std::chrono::microseconds d)
{
	auto end = std::chrono::steady_clock::now() + d;
	volatile unsigned long x = 1;

	while (std::chrono::steady_clock::now() < end)
		for (int i = 0; i < 200; i++)
			x = x * 6364136223846793005ul + 1;
}

__attribute__((noinline)) static void guarded_section()
{
	std::lock_guard<std::mutex> g(counter_mutex);
	counter++;
	busy(std::chrono::microseconds(200));
}

static void worker(std::chrono::steady_clock::time_point deadline)
{
	while (std::chrono::steady_clock::now() < deadline) {
		guarded_section();
		busy(std::chrono::microseconds(20));
	}
}

int main()
{
	auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(800);
	std::thread a(worker, deadline), b(worker, deadline);

	a.join();
	b.join();
	std::printf("counter %ld\n", counter);
	return 0;
}
