// SPDX-License-Identifier: MIT
// rustprog: burns 0.3 s in rustprog::narwhal::burner::spin_rust, for the
// demangling test (built by tests/integration/demangle.sh with rustc when
// it is installed; no cargo, no crates).
mod narwhal {
    pub mod burner {
        use std::ptr::{read_volatile, write_volatile};
        use std::time::Instant;

        #[inline(never)]
        pub fn spin_rust(seconds: f64) -> u64 {
            let start = Instant::now();
            let mut x: u64 = 1;
            while start.elapsed().as_secs_f64() < seconds {
                for _ in 0..20000 {
                    // Volatile, so the loop is kept (std::hint::black_box
                    // is not stable in Debian 12's rustc 1.63).
                    unsafe {
                        let v = read_volatile(&x);
                        write_volatile(&mut x, v.wrapping_mul(6364136223846793005).wrapping_add(1));
                    }
                }
            }
            x
        }
    }
}

fn main() {
    let x = narwhal::burner::spin_rust(0.3);
    std::process::exit(if x == 0 { 1 } else { 0 });
}
