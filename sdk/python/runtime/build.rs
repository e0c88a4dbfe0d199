//! Links the MicroPython core that build.sh compiled (target/c/
//! libmicropython.a); build.sh runs first.
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/c");
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=micropython");
    println!(
        "cargo:rerun-if-changed={}",
        dir.join("libmicropython.a").display()
    );
}
