use tern_server::ElicitForm;

#[derive(serde::Deserialize)]
struct Address {
    street: String,
}

#[derive(serde::Deserialize, ElicitForm)]
struct Person {
    name: String,
    address: Address,
}

fn main() {}
