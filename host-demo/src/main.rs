//! `cargo run --release -p host-demo`: the brownout demo (see `demo`'s module docs and
//! `--help`).

mod demo;

fn main() -> std::process::ExitCode {
    demo::main()
}
