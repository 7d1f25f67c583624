//! The `hmw` crate's public surface is the list in `framework/api.txt`: this test prints the
//! surface from the sources and fails when it differs from the list, so that no change to
//! what applications see goes unnoticed. After a deliberate change, write the list anew with
//! `HMW_BLESS_API=1 cargo test -p hmw --test public_api` and review its diff.
//!
//! The surface is what the crate root declares public (it has no public module): each item
//! with its signature, and for what it re-exports from `hmw-core`, the definition there — a
//! struct's public fields, an enum's variants, a trait's items, the public methods of the
//! type's inherent `impl` blocks, its derives. Documentation is left out. Read from the
//! sources with `syn` (the stable toolchain has no rustdoc JSON).

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
};

use syn::{Attribute, Fields, File, ImplItem, Item, ItemUse, TraitItem, UseTree, Visibility};

/// The most items the crate root may offer.
const MOST_ITEMS: usize = 40;

/// A crate's sources: its `src` folder.
struct Crate {
    name: &'static str,
    src: PathBuf,
}

fn parse(path: &Path) -> File {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl Crate {
    /// The file of module `path` (`[]`: the crate root).
    fn module_file(&self, path: &[String]) -> PathBuf {
        if path.is_empty() {
            return self.src.join("lib.rs");
        }
        let folder = path.iter().fold(self.src.clone(), |p, s| p.join(s));
        let flat = folder.with_extension("rs");
        if flat.exists() {
            flat
        } else {
            folder.join("mod.rs")
        }
    }

    /// Every source file of the crate.
    fn files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            let mut entries: Vec<_> = fs::read_dir(dir).unwrap().flatten().collect();
            entries.sort_by_key(|e| e.path());
            for entry in entries {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.src, &mut out);
        out
    }
}

/// The leaves of a `use` tree: the path to each name, and the name it is known by.
fn use_leaves(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push((path, n.ident.to_string()));
        }
        UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push((path, r.rename.to_string()));
        }
        UseTree::Glob(_) => panic!(
            "a glob re-export ({}::*) hides the surface",
            prefix.join("::")
        ),
        UseTree::Group(g) => {
            for tree in &g.items {
                use_leaves(tree, prefix, out);
            }
        }
    }
}

fn is_pub(vis: &Visibility) -> bool {
    matches!(vis, Visibility::Public(_))
}

fn item_name(item: &Item) -> Option<String> {
    Some(match item {
        Item::Fn(i) => i.sig.ident.to_string(),
        Item::Struct(i) => i.ident.to_string(),
        Item::Enum(i) => i.ident.to_string(),
        Item::Trait(i) => i.ident.to_string(),
        Item::Type(i) => i.ident.to_string(),
        Item::Const(i) => i.ident.to_string(),
        _ => return None,
    })
}

/// Only the derives stay of an item's attributes: they are part of what users can rely on.
fn derives_only(attrs: &mut Vec<Attribute>) {
    attrs.retain(|a| a.path().is_ident("derive"));
}

/// `item` as the surface shows it: no documentation, no function bodies, no private fields.
fn surface(mut item: Item) -> Item {
    match &mut item {
        Item::Fn(f) => {
            derives_only(&mut f.attrs);
            f.block.stmts.clear();
        }
        Item::Struct(s) => {
            derives_only(&mut s.attrs);
            if let Fields::Named(fields) = &mut s.fields {
                fields.named = fields
                    .named
                    .iter()
                    .filter(|f| is_pub(&f.vis))
                    .cloned()
                    .map(|mut f| {
                        f.attrs.clear();
                        f
                    })
                    .collect();
            }
        }
        Item::Enum(e) => {
            derives_only(&mut e.attrs);
            for variant in &mut e.variants {
                variant.attrs.clear();
                for field in variant.fields.iter_mut() {
                    field.attrs.clear();
                }
            }
        }
        Item::Trait(t) => {
            derives_only(&mut t.attrs);
            for item in &mut t.items {
                match item {
                    TraitItem::Fn(f) => {
                        f.attrs.clear();
                        if let Some(block) = &mut f.default {
                            block.stmts.clear();
                        }
                    }
                    TraitItem::Type(t) => t.attrs.clear(),
                    TraitItem::Const(c) => c.attrs.clear(),
                    _ => {}
                }
            }
        }
        Item::Type(t) => derives_only(&mut t.attrs),
        Item::Const(c) => derives_only(&mut c.attrs),
        Item::Impl(i) => {
            i.attrs.clear();
            i.items
                .retain(|item| matches!(item, ImplItem::Fn(f) if is_pub(&f.vis)));
            for item in &mut i.items {
                if let ImplItem::Fn(f) = item {
                    f.attrs.clear();
                    f.block.stmts.clear();
                }
            }
        }
        _ => {}
    }
    item
}

/// The definition of `name` in module `module` of `krate`, following re-exports; with the
/// public inherent `impl` blocks of a type, from any file of the crate.
fn definition(krate: &Crate, module: &[String], name: &str) -> Vec<Item> {
    let file = parse(&krate.module_file(module));
    for item in &file.items {
        if item_name(item).as_deref() == Some(name) {
            let mut found = vec![item.clone()];
            if matches!(item, Item::Struct(_) | Item::Enum(_)) {
                found.extend(inherent_impls(krate, name));
            }
            return found;
        }
    }
    // A re-export: `pub use child::Name` or `pub use crate::a::b::Name`.
    for item in &file.items {
        let Item::Use(ItemUse { vis, tree, .. }) = item else {
            continue;
        };
        if !is_pub(vis) {
            continue;
        }
        let mut leaves = Vec::new();
        use_leaves(tree, &mut Vec::new(), &mut leaves);
        for (path, known_as) in leaves {
            if known_as != name {
                continue;
            }
            let (target, original) = path.split_at(path.len() - 1);
            let target: Vec<String> = match target.first().map(String::as_str) {
                Some("crate") => target[1..].to_vec(),
                Some("self") => module.iter().chain(&target[1..]).cloned().collect(),
                Some("super") => module[..module.len() - 1]
                    .iter()
                    .chain(&target[1..])
                    .cloned()
                    .collect(),
                _ => module.iter().chain(target).cloned().collect(),
            };
            return definition(krate, &target, &original[0]);
        }
    }
    panic!(
        "{}: no item `{name}` in module `{}`",
        krate.name,
        module.join("::")
    );
}

/// The public inherent `impl` blocks of type `name` anywhere in `krate`.
fn inherent_impls(krate: &Crate, name: &str) -> Vec<Item> {
    let mut found = Vec::new();
    for path in krate.files() {
        for item in parse(&path).items {
            let Item::Impl(block) = &item else {
                continue;
            };
            let syn::Type::Path(self_type) = &*block.self_ty else {
                continue;
            };
            let is_it = self_type
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == name);
            let has_pub = block
                .items
                .iter()
                .any(|i| matches!(i, ImplItem::Fn(f) if is_pub(&f.vis)));
            if block.trait_.is_none() && is_it && has_pub {
                found.push(item.clone());
            }
        }
    }
    found
}

/// The surface, as `framework/api.txt` lists it, and the number of items at the root.
fn render() -> (String, usize) {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let hmw = Crate {
        name: "hmw",
        src: manifest.join("src"),
    };
    let core = Crate {
        name: "hmw-core",
        src: manifest.join("../core/src"),
    };
    let root = parse(&hmw.module_file(&[]));
    let mut items: BTreeMap<String, Vec<Item>> = BTreeMap::new();
    for item in &root.items {
        match item {
            Item::Mod(m) => assert!(
                !is_pub(&m.vis),
                "`pub mod {}`: the crate root has no public module; re-export what \
                 applications need",
                m.ident
            ),
            Item::Use(u) if is_pub(&u.vis) => {
                let mut leaves = Vec::new();
                use_leaves(&u.tree, &mut Vec::new(), &mut leaves);
                for (path, known_as) in leaves {
                    let (module, original) = path.split_at(path.len() - 1);
                    let found = match module.first().map(String::as_str) {
                        Some("hmw_core") => definition(&core, &module[1..], &original[0]),
                        Some("crate") => definition(&hmw, &module[1..], &original[0]),
                        _ => definition(&hmw, module, &original[0]),
                    };
                    items.insert(known_as, found);
                }
            }
            other => {
                let public = match other {
                    Item::Fn(i) => is_pub(&i.vis),
                    Item::Struct(i) => is_pub(&i.vis),
                    Item::Enum(i) => is_pub(&i.vis),
                    Item::Trait(i) => is_pub(&i.vis),
                    Item::Type(i) => is_pub(&i.vis),
                    Item::Const(i) => is_pub(&i.vis),
                    _ => false,
                };
                if let (true, Some(name)) = (public, item_name(other)) {
                    items.insert(name, vec![other.clone()]);
                }
            }
        }
    }
    let mut text = String::from(
        "# The public surface of the crate `hmw`, checked by framework/tests/public_api.rs.\n",
    );
    for (name, found) in &items {
        let file = File {
            shebang: None,
            attrs: Vec::new(),
            items: found.iter().cloned().map(surface).collect(),
        };
        text.push_str(&format!(
            "\n## hmw::{name}\n\n{}",
            prettyplease::unparse(&file)
        ));
    }
    (text, items.len())
}

#[test]
fn the_public_api_is_the_one_listed() {
    let (rendered, count) = render();
    let listed_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("api.txt");
    if std::env::var_os("HMW_BLESS_API").is_some() {
        fs::write(&listed_path, &rendered).unwrap();
    }
    assert!(
        count <= MOST_ITEMS,
        "the crate root offers {count} items, more than {MOST_ITEMS}"
    );
    let listed = fs::read_to_string(&listed_path).unwrap_or_default();
    if listed != rendered {
        let first = listed
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(listed.lines().count().min(rendered.lines().count()));
        panic!(
            "hmw's public surface differs from framework/api.txt from line {} on:\n  listed:  \
             {:?}\n  sources: {:?}\nIf the change is meant, run `HMW_BLESS_API=1 cargo test -p \
             hmw --test public_api` and review the list's diff.",
            first + 1,
            listed.lines().nth(first),
            rendered.lines().nth(first)
        );
    }
}
