//! The registry's profiles and deferral: which form of each tool is advertised, and which tools
//! are offered on demand only, behind `more_tools`.

use std::collections::HashSet;
use std::sync::Arc;

use super::definition::compact_definition;
use super::erased::Typed;
use super::{DynTool, Forms, Registry, ToolDefinition};
use crate::profile::Profile;
use crate::registry::more_tools::MoreToolsTool;
use crate::tool::Tool;

impl Registry {
    /// Puts the definitions in `profile`: [`Profile::Compact`] sends each tool's short
    /// description and common parameters ([`Tool::COMPACT_DESCRIPTION`],
    /// [`Tool::COMPACT_PARAMETERS`]; the parameters left out stay accepted) and defers the
    /// tools few tasks need ([`Tool::ON_DEMAND`]) and every tool added at run time, now or
    /// later, behind `more_tools`; [`Profile::Full`] puts everything back. By default, full.
    pub fn use_profile(&mut self, profile: Profile) {
        if self.profile == profile {
            return;
        }
        self.profile = profile;
        let forms: Vec<(String, Forms)> = self
            .forms
            .iter()
            .map(|(name, forms)| (name.clone(), forms.clone()))
            .collect();
        for (name, forms) in forms {
            let entry = match profile {
                Profile::Full => forms.full,
                Profile::Compact => forms.compact,
            };
            self.swap(&name, entry);
        }
        match profile {
            Profile::Compact => {
                let optional: Vec<String> = self.on_demand.union(&self.added).cloned().collect();
                for name in optional {
                    self.defer_for_profile(&name);
                }
            }
            Profile::Full => {
                let given_back = std::mem::take(&mut self.deferred_by_profile);
                self.deferred.retain(|name| !given_back.contains(name));
            }
        }
        self.rebuild_more_tools();
    }

    /// The profile the definitions are in ([`Registry::use_profile`]).
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Replaces the entry registered as `name` with `entry` (the same tool in another form).
    pub(super) fn swap(&mut self, name: &str, entry: Arc<dyn DynTool>) {
        if let Some(&index) = self.by_name.get(name) {
            self.entries[index] = entry;
        }
    }

    /// Defers `name` for the compact profile, remembering it so the full profile gives it back.
    pub(super) fn defer_for_profile(&mut self, name: &str) {
        if !self.deferred.contains(name) && self.defer(name) {
            self.deferred_by_profile.insert(name.to_owned());
        }
    }

    /// Offers the tool `name` on demand only: [`Registry::offered`] leaves it out until the
    /// model enables it through the `more_tools` tool (registered with the first deferred tool,
    /// removed with the last) or the embedder calls [`Session::enable_tool`](crate::Session::enable_tool). It stays callable
    /// by name. For small windows and many tools: those of MCP servers, the web, documents.
    /// False when no tool is registered as `name` (exactly, or an exact alias).
    pub fn defer(&mut self, name: &str) -> bool {
        let Some(&index) = self.by_name.get(name) else {
            return false;
        };
        let name = self.entries[index].definition().name.clone();
        if name == MoreToolsTool::NAME {
            return false;
        }
        if self.deferred.insert(name) {
            self.rebuild_more_tools();
        }
        true
    }

    /// Whether the registered tool `name` is offered on demand only ([`Registry::defer`]).
    pub fn is_deferred(&self, name: &str) -> bool {
        self.deferred.contains(name)
    }

    /// The definitions of the deferred tools, in registration order.
    pub fn deferred(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.definitions()
            .filter(|d| self.deferred.contains(&d.name))
    }

    /// Brings `more_tools` in line with the deferred set: its catalog is every deferred tool
    /// still registered; with none, it goes. A new tool each time, so a cloned registry keeps
    /// its own catalog.
    pub(super) fn rebuild_more_tools(&mut self) {
        let registered: HashSet<String> = self.definitions().map(|d| d.name.clone()).collect();
        self.deferred.retain(|name| registered.contains(name));
        let catalog: Vec<ToolDefinition> = self.deferred().cloned().collect();
        let existing = self.by_name.get(MoreToolsTool::NAME).copied();
        match (existing, catalog.is_empty()) {
            (Some(index), false) => {
                let tool = MoreToolsTool::new(catalog);
                let mut definition = ToolDefinition::of(&tool);
                if self.profile == Profile::Compact
                    && let Some(compact) = compact_definition::<MoreToolsTool>(&definition)
                {
                    definition = compact;
                }
                self.entries[index] = Arc::new(Typed {
                    tool: Arc::new(tool),
                    definition,
                });
            }
            (None, false) => self.register(MoreToolsTool::new(catalog)),
            (Some(_), true) => self.retain_entries(|d| d.name != MoreToolsTool::NAME),
            (None, true) => {}
        }
    }
}
