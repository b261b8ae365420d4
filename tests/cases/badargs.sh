# Bad arguments to ibv_rereg_mr, ibv_advise_mr, ibv_bind_mw (with
# ibv_alloc_mw) and ibv_import_pd / ibv_import_mr, as their man pages name
# or imply them: each is refused with the code the page names (EINVAL where
# it names none; EFAULT for memory the process does not have, ENOENT for a
# handle that names nothing) and leaves its object as it was. A refused
# rereg keeps the MR's keys, range and PD, and the MR still carries a
# WRITE, a READ and a SEND; a refused prefetch faults no page in; after a
# refused bind neither the window's old key nor the one the bind would have
# given lets a byte land, and the window still binds; a good handle imports
# and unimports without touching its object. Nothing is left afterwards.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
run_each sroce-badargs sroce0 rereg_future_flags rereg_no_flags rereg_access_without_flag \
	rereg_trans_zero_length rereg_trans_null_addr rereg_trans_wraps \
	rereg_trans_unmapped rereg_future_access rereg_remote_write_no_local \
	rereg_all_or_nothing rereg_pd_other_context rereg_imported_mr \
	advise_future_advice advise_future_flags advise_no_sge \
	advise_lkey_names_nothing advise_lkey_not_odp advise_range_wraps \
	advise_range_past_end advise_write_readonly advise_other_pd \
	advise_stale_pd advise_mw_key \
	bind_type2_window bind_null_mr bind_mr_without_mw_bind \
	bind_outside_mr bind_range_wraps bind_future_access \
	bind_remote_write_no_local_write bind_mr_other_pd bind_qp_other_pd \
	bind_ud_qp \
	import_pd_bad_handle import_mr_bad_handle import_mr_same_process \
	import_mr_other_pd
