//! Placeholder: the device model (being written).
/// Device model.
pub struct DeviceModel<S>(pub S);
/// Device profile.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeviceProfile;
