//! Address arithmetic on `MPI_Aint` (`MPI_Aint_add`, `MPI_Aint_diff`): the standard's portable
//! way to offset and subtract addresses obtained from `MPI_Get_address`. weft's addresses are
//! plain machine addresses, so both are two's-complement integer arithmetic (wrapping, as
//! address arithmetic in C is on the platforms weft supports); neither touches the instance,
//! so both work before `MPI_Init` and after `MPI_Finalize`.

use crate::abi::MPI_Aint;

/// `MPI_Aint_add`: `base + disp`.
#[no_mangle]
pub extern "C" fn PMPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

crate::weak_alias!(MPI_Aint_add / PMPI_Aint_add);

/// `MPI_Aint_diff`: `addr1 - addr2`.
#[no_mangle]
pub extern "C" fn PMPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}

crate::weak_alias!(MPI_Aint_diff / PMPI_Aint_diff);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_and_diff_are_inverse() {
        let x = [0u8; 16];
        let base = x.as_ptr() as MPI_Aint;
        let p = MPI_Aint_add(base, 12);
        assert_eq!(p, &x[12] as *const u8 as MPI_Aint);
        assert_eq!(MPI_Aint_diff(p, base), 12);
        assert_eq!(MPI_Aint_diff(base, p), -12);
        assert_eq!(PMPI_Aint_add(MPI_Aint::MAX, 1), MPI_Aint::MIN);
    }
}
