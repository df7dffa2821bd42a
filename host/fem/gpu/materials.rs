//! Element materials on the GPU: the kernels' (λ, μ) table and each element's index.

use super::*;

/// (λ, μ) of each material, in order: the kernels' material table.
fn lame_table<T: Real>(ms: &[Material]) -> Vec<T> {
    ms.iter()
        .flat_map(|m| {
            let l = m.lame::<T>();
            [l.lambda, l.mu]
        })
        .collect()
}

/// Element materials on the GPU as the kernels take them: (λ, μ) per material and each
/// element's index. A single material uploads a one-entry table and the index `[0]` (the kernels
/// then read `index[0]` for every element: `materials = 1`).
pub struct DeviceMaterials<T> {
    pub(super) lames: CudaSlice<T>,
    pub(super) index: CudaSlice<u32>,
    pub(super) count: u32,
}

impl<T: GpuReal> DeviceMaterials<T> {
    /// Uploads `materials` (whose index must cover the mesh's elements: checked at assembly).
    pub fn upload(gpu: &Gpu, materials: &ElementMaterials) -> Result<Self, FemError> {
        if let Some(m) = materials.single() {
            return Ok(DeviceMaterials {
                lames: gpu.upload(&lame_table::<T>(&[m]))?,
                // With one material the kernels read index[0] (0) for every element.
                index: gpu.upload(&[0u32])?,
                count: 1,
            });
        }
        let count = u32::try_from(materials.table.len())
            .map_err(|_| FemError::MeshSize("more than 2^32 materials".into()))?;
        if let Some(&i) = materials.index.iter().find(|&&i| i >= count) {
            return Err(FemError::MeshSize(format!(
                "material index {i} past the table of {count}"
            )));
        }
        Ok(DeviceMaterials {
            lames: gpu.upload(&lame_table::<T>(&materials.table))?,
            index: gpu.upload(&materials.index)?,
            count,
        })
    }

    /// One material for every element.
    pub fn uniform(gpu: &Gpu, material: &Material) -> Result<Self, FemError> {
        Self::upload(gpu, &ElementMaterials::uniform(*material, 1))
    }

    /// Compares the uploaded table and index with `materials` (as [`GpuMesh::check_inputs`]).
    pub fn check(&self, gpu: &Gpu, materials: &ElementMaterials) -> Result<Vec<String>, GpuError>
    where
        T: std::fmt::Debug,
    {
        let mut diffs = Vec::new();
        let (lames, index) = match materials.single() {
            Some(m) => (lame_table::<T>(&[m]), vec![0u32]),
            None => (lame_table::<T>(&materials.table), materials.index.clone()),
        };
        compare(
            "material table",
            &lames,
            &gpu.download(&self.lames)?,
            &mut diffs,
        );
        compare(
            "material index",
            &index,
            &gpu.download(&self.index)?,
            &mut diffs,
        );
        Ok(diffs)
    }

    /// Elements the per-element index covers (`None`: one material, any mesh).
    pub(super) fn elements(&self) -> Option<usize> {
        (self.count > 1).then(|| self.index.len())
    }
}
