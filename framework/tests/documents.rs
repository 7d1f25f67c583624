//! The README shows the hello example as it is: its Rust block is `examples/hello/src/main.rs`,
//! so the code a newcomer reads first is the code `examples/hello/run.sh` runs (the block is
//! also compiled, as a documentation test of this crate).

use std::{fs, path::Path};

#[test]
fn the_readme_shows_hello_as_it_is() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let hello = fs::read_to_string(root.join("examples/hello/src/main.rs")).unwrap();
    let start = readme.find("```rust").expect("a Rust block in the README");
    let code = &readme[start..];
    let code = &code[code.find('\n').unwrap() + 1..];
    let code = &code[..code.find("```").expect("the block's end")];
    assert_eq!(
        code, hello,
        "README.md's hello differs from examples/hello/src/main.rs"
    );
}
